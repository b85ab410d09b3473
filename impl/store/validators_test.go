package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

func newValidator(name string) *domain.Validator {
	return &domain.Validator{
		Name:            name,
		Phase:           domain.PhasePending,
		CustomAuth:      true,
		DatabaseStorage: "10Gi",
		MigrationID:     3,
		Spec:            []byte(`{"imageTag":"0.4.1"}`),
		WalletUserID:    "user-1",
	}
}

func mustCreateValidator(t *testing.T, s *store.Store, v *domain.Validator) {
	t.Helper()
	if err := s.CreateValidator(context.Background(), v); err != nil {
		t.Fatalf("create validator %q: %v", v.Name, err)
	}
}

func wantValidator(t *testing.T, s *store.Store, want domain.Validator) {
	t.Helper()
	got, err := s.GetValidator(context.Background(), want.Name)
	if err != nil {
		t.Fatalf("get validator %q: %v", want.Name, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back\n got %+v\nwant %+v", got, want)
	}
}

func TestValidatorLifecycle(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		before := time.Now().UTC().Add(-time.Second)
		v := newValidator("alpha")
		mustCreateValidator(t, s, v)
		if v.CreatedAt.Before(before) || v.CreatedAt.Location() != time.UTC || !v.UpdatedAt.Equal(v.CreatedAt) {
			t.Fatalf("got CreatedAt %v UpdatedAt %v, want now in UTC, equal", v.CreatedAt, v.UpdatedAt)
		}
		wantValidator(t, s, *v)

		created := v.CreatedAt
		edit := *v
		edit.Phase = domain.PhaseRunning
		edit.Immutable = true
		edit.CustomAuth = false
		edit.ExternalDatabase = true
		edit.DatabaseStorage = ""
		edit.MigrationID = 4
		edit.Migrating = true
		edit.Spec = []byte(`{"imageTag":"0.4.2"}`)
		edit.WalletUserID = ""
		edit.CreatedAt = time.Time{} // the store keeps the stored one
		if err := s.UpdateValidator(ctx, &edit); err != nil {
			t.Fatalf("update: %v", err)
		}
		if !edit.CreatedAt.Equal(created) || edit.UpdatedAt.Before(created) {
			t.Fatalf("got CreatedAt %v UpdatedAt %v, want CreatedAt %v and a later UpdatedAt", edit.CreatedAt, edit.UpdatedAt, created)
		}
		wantValidator(t, s, edit)

		wantErr(t, s.UpdateValidator(ctx, newValidator("absent")), domain.ErrNotFound)
		_, err := s.GetValidator(ctx, "absent")
		wantErr(t, err, domain.ErrNotFound)

		wantErr(t, s.DeleteValidator(ctx, "alpha"), nil)
		_, err = s.GetValidator(ctx, "alpha")
		wantErr(t, err, domain.ErrNotFound)
		wantErr(t, s.DeleteValidator(ctx, "alpha"), domain.ErrNotFound)
	})
}

func TestCreateValidatorDuplicate(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		first := newValidator("dup")
		mustCreateValidator(t, s, first)
		second := newValidator("dup")
		second.WalletUserID = "user-2"
		err := s.CreateValidator(context.Background(), second)
		wantErr(t, err, domain.ErrConflict)
		if got, want := err.Error(), `validator "dup" already exists`; got != want {
			t.Fatalf("got message %q, want %q", got, want)
		}
		wantValidator(t, s, *first)
		if n := count(t, s, "SELECT COUNT(*) FROM validators"); n != 1 {
			t.Fatalf("got %d rows, want 1", n)
		}
	})
}

// run starts n goroutines at once and returns their errors.
func run(n int, f func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

func TestCreateValidatorConcurrent(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		const n = 20
		errs := run(n, func(i int) error {
			v := newValidator("race")
			v.WalletUserID = fmt.Sprint("user-", i)
			return s.CreateValidator(ctx, v)
		})
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("got creates %d and %d both succeeding, want exactly one", winner, i)
			case err == nil:
				winner = i
			default:
				wantErr(t, err, domain.ErrConflict)
			}
		}
		if winner < 0 {
			t.Fatal("got no create succeeding, want exactly one")
		}
		got, err := s.GetValidator(ctx, "race")
		wantErr(t, err, nil)
		if want := fmt.Sprint("user-", winner); got.WalletUserID != want {
			t.Fatalf("got WalletUserID %q, want the winner's %q", got.WalletUserID, want)
		}

		// Distinct names written at once all succeed: writers wait for
		// each other instead of failing with "database is locked".
		errs = run(n, func(i int) error { return s.CreateValidator(ctx, newValidator(fmt.Sprint("v", i))) })
		for i, err := range errs {
			if err != nil {
				t.Fatalf("create v%d: got %v, want no error", i, err)
			}
		}
		if got := count(t, s, "SELECT COUNT(*) FROM validators"); got != n+1 {
			t.Fatalf("got %d rows, want %d", got, n+1)
		}
	})
}

// listFixture is a set of names that LIKE patterns, case folding and
// collation would get wrong.
var listFixture = []struct {
	name  string
	phase domain.Phase
}{
	{"a%b", domain.PhaseRunning},
	{"a_b", domain.PhasePending},
	{`a\b`, domain.PhaseRunning},
	{"axb", domain.PhaseCompleted},
	{"ab", domain.PhaseRunning},
	{"Ab", domain.PhasePending},
	{"AB", domain.PhaseRunning},
	{"abc", domain.PhaseCompleted},
	{"xab", domain.PhaseRunning},
	{"100%", domain.PhasePending},
	{"pre_fix", domain.PhaseRunning},
	{`back\slash`, domain.PhaseCompleted},
}

func TestListValidators(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, f := range listFixture {
			v := newValidator(f.name)
			v.Phase = f.phase
			mustCreateValidator(t, s, v)
		}
		tests := []struct {
			contains string
			phase    domain.Phase
			want     []string // in byte order of the names
		}{
			{"", "", []string{"100%", "AB", "Ab", "a%b", `a\b`, "a_b", "ab", "abc", "axb", `back\slash`, "pre_fix", "xab"}},
			{"%", "", []string{"100%", "a%b"}},
			{"_", "", []string{"a_b", "pre_fix"}},
			{`\`, "", []string{`a\b`, `back\slash`}},
			{"a%", "", []string{"a%b"}},
			{"a_b", "", []string{"a_b"}},
			{`a\b`, "", []string{`a\b`}},
			{`\s`, "", []string{`back\slash`}},
			{"ab", "", []string{"ab", "abc", "xab"}},
			{"AB", "", []string{"AB"}},
			{"A", "", []string{"AB", "Ab"}},
			{"zzz", "", nil},
			{"", domain.PhaseRunning, []string{"AB", "a%b", `a\b`, "ab", "pre_fix", "xab"}},
			{"ab", domain.PhaseRunning, []string{"ab", "xab"}},
			{"b", domain.PhaseCompleted, []string{"abc", "axb", `back\slash`}},
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%q %s", tt.contains, tt.phase), func(t *testing.T) {
				got, total, err := s.ListValidators(ctx, domain.ValidatorFilter{
					NameContains: tt.contains, Phase: tt.phase, Page: domain.Page{Limit: 100},
				})
				wantErr(t, err, nil)
				if names := validatorNames(got); !reflect.DeepEqual(names, tt.want) {
					t.Fatalf("got %q, want %q", names, tt.want)
				}
				if total != int64(len(tt.want)) {
					t.Fatalf("got total %d, want %d", total, len(tt.want))
				}
				for _, v := range got {
					if tt.phase != "" && v.Phase != tt.phase {
						t.Fatalf("got %q in phase %s, want %s", v.Name, v.Phase, tt.phase)
					}
				}
			})
		}
	})
}

func validatorNames(vs []domain.ListedValidator) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

func TestListValidatorsPages(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var want []string
		for i := range 47 {
			name := fmt.Sprintf("node-%02d", (i*17)%47) // inserted out of order
			v := newValidator(name)
			if i%3 == 0 {
				v.Phase = domain.PhaseRunning
			}
			mustCreateValidator(t, s, v)
			want = append(want, name)
		}
		mustCreateValidator(t, s, newValidator("other"))
		sort.Strings(want)

		for _, limit := range []int{1, 5, 10, 47, 100} {
			t.Run(fmt.Sprint("limit ", limit), func(t *testing.T) {
				var got []string
				for offset := 0; ; offset += limit {
					page, total, err := s.ListValidators(ctx, domain.ValidatorFilter{
						NameContains: "node-", Page: domain.Page{Offset: offset, Limit: limit},
					})
					wantErr(t, err, nil)
					if total != int64(len(want)) {
						t.Fatalf("offset %d: got total %d, want %d", offset, total, len(want))
					}
					if len(page) > limit {
						t.Fatalf("offset %d: got %d rows, want at most %d", offset, len(page), limit)
					}
					if len(page) == 0 {
						break
					}
					got = append(got, validatorNames(page)...)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("walking the pages\n got %q\nwant %q", got, want)
				}
			})
		}

		// A page past the end is empty but still counts the filtered set.
		page, total, err := s.ListValidators(ctx, domain.ValidatorFilter{
			Phase: domain.PhaseRunning, Page: domain.Page{Offset: 1000, Limit: 10},
		})
		wantErr(t, err, nil)
		if len(page) != 0 || total != 16 {
			t.Fatalf("got %d rows and total %d, want 0 rows and total 16", len(page), total)
		}
	})
}

func TestListValidatorsRefusesBadPages(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		for _, p := range []domain.Page{{Limit: 0}, {Limit: -1}, {Offset: -1, Limit: 10}} {
			_, _, err := s.ListValidators(context.Background(), domain.ValidatorFilter{Page: p})
			wantErr(t, err, domain.ErrInvalid)
		}
	})
}

func TestSyncValidatorState(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		v := newValidator("synced")
		mustCreateValidator(t, s, v)

		state := domain.ValidatorState{Phase: domain.PhaseRunning, DisableUserEdit: true, DatabaseRunning: true}
		wantErr(t, s.SyncValidatorState(ctx, "synced", state), nil)
		got, err := s.GetValidator(ctx, "synced")
		wantErr(t, err, nil)
		if got.Phase != domain.PhaseRunning || !got.Immutable {
			t.Fatalf("got phase %s immutable %v, want RUNNING true", got.Phase, got.Immutable)
		}
		if got.UpdatedAt.Before(v.UpdatedAt) {
			t.Fatalf("got UpdatedAt %v, want not before %v", got.UpdatedAt, v.UpdatedAt)
		}
		// The same state again changes nothing, not even updated_at.
		wantErr(t, s.SyncValidatorState(ctx, "synced", state), nil)
		wantValidator(t, s, got)

		wantErr(t, s.SyncValidatorState(ctx, "absent", state), nil)
		if n := count(t, s, "SELECT COUNT(*) FROM validators"); n != 1 {
			t.Fatalf("got %d rows, want 1", n)
		}
	})
}

// TestPendingSecretsCompareAndClear: the leader clears the pending secrets
// it wrote, never those an edit recorded meanwhile.
func TestPendingSecretsCompareAndClear(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		v := newValidator("a0")
		v.PendingSecrets = "sealed-1"
		mustCreateValidator(t, s, v)
		edited := *v
		edited.PendingSecrets = "sealed-2"
		if err := s.UpdateValidator(ctx, &edited); err != nil {
			t.Fatal(err)
		}
		if err := s.ClearPendingSecrets(ctx, "a0", "sealed-1"); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetValidator(ctx, "a0"); got.PendingSecrets != "sealed-2" {
			t.Fatalf("after clearing what was written before the edit: got %q, want the edit's sealed-2", got.PendingSecrets)
		}
		if err := s.ClearPendingSecrets(ctx, "a0", "sealed-2"); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetValidator(ctx, "a0"); got.PendingSecrets != "" {
			t.Fatalf("after clearing what it holds: got %q, want empty", got.PendingSecrets)
		}
		if err := s.SetProvisionError(ctx, "a0", "the identity provider is down"); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetValidator(ctx, "a0"); got.ProvisionError != "the identity provider is down" {
			t.Fatalf("provision error: got %q", got.ProvisionError)
		}
	})
}

// TestChangeFeed: every write of an operator's request names its validator
// in the change feed once per take; the leader's bookkeeping does not.
func TestChangeFeed(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		take := func() []string {
			t.Helper()
			names, err := s.TakeChanges(ctx, 100)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(names)
			return names
		}
		take() // whatever earlier migrations left
		prune := &domain.PruneSchedule{Validator: "a0", Cron: "0 0 20 * * ?", MaxDuration: time.Minute, Retention: time.Hour}
		if err := s.RecordCreate(ctx, newValidator("a0"), prune); err != nil {
			t.Fatal(err)
		}
		mustCreateValidator(t, s, newValidator("a1"))
		if got := take(); !slices.Equal(got, []string{"a0", "a1"}) {
			t.Fatalf("after creates: got %v, want [a0 a1]", got)
		}
		if got := take(); len(got) != 0 {
			t.Fatalf("taken twice: got %v", got)
		}
		// The leader's bookkeeping is no change of intent.
		if err := s.SyncValidatorState(ctx, "a0", domain.ValidatorState{Phase: domain.PhaseRunning}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetWalletUser(ctx, "a0", "u"); err != nil {
			t.Fatal(err)
		}
		if err := s.ClearPendingSecrets(ctx, "a0", ""); err != nil {
			t.Fatal(err)
		}
		if got := take(); len(got) != 0 {
			t.Fatalf("after the leader's bookkeeping: got %v, want none", got)
		}
		v, _ := s.GetValidator(ctx, "a1")
		if err := s.UpdateValidator(ctx, &v); err != nil {
			t.Fatal(err)
		}
		if err := s.DeletePruneSchedule(ctx, "a0"); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteValidator(ctx, "a1"); err != nil {
			t.Fatal(err)
		}
		if got := take(); !slices.Equal(got, []string{"a0", "a1"}) {
			t.Fatalf("after an edit, a schedule delete and a delete: got %v, want [a0 a1]", got)
		}
	})
}

// TestRecordCreateWhole: a create whose pruning schedule cannot be stored
// leaves no row.
func TestRecordCreateWhole(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		bad := &domain.PruneSchedule{Validator: "other", Cron: "x"} // no such validator: the foreign key refuses it
		if err := s.RecordCreate(ctx, newValidator("a0"), bad); err == nil {
			t.Fatal("got no error, want the schedule refused")
		}
		if _, err := s.GetValidator(ctx, "a0"); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("validator after a refused create: got %v, want ErrNotFound", err)
		}
	})
}

// TestListedColumns: a page carries each row's name, phase, flag and list
// view as written; a row without a view reads as version 0, and the stale
// views are those of another version, each once.
func TestListedColumns(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a := newValidator("alpha")
		a.Phase, a.ListView, a.ListViewVersion = domain.PhaseRunning, []byte(`{"imageTag":"1.0"}`), 3
		mustCreateValidator(t, s, a)
		mustCreateValidator(t, s, newValidator("beta")) // no view
		wantErr(t, s.SyncValidatorState(ctx, "alpha", domain.ValidatorState{Phase: domain.PhaseCompleted, DisableUserEdit: true}), nil)

		page, total, err := s.ListValidators(ctx, domain.ValidatorFilter{Page: domain.Page{Limit: 10}})
		wantErr(t, err, nil)
		want := []domain.ListedValidator{
			{Name: "alpha", Phase: domain.PhaseCompleted, Immutable: true, ListView: []byte(`{"imageTag":"1.0"}`), ListViewVersion: 3},
			{Name: "beta", Phase: newValidator("beta").Phase},
		}
		if total != 2 || !reflect.DeepEqual(page, want) {
			t.Errorf("got %d %+v, want 2 %+v", total, page, want)
		}

		stale, err := s.StaleListViews(ctx, 3, "", 10)
		wantErr(t, err, nil)
		if len(stale) != 1 || stale[0].Name != "beta" || len(stale[0].Spec) == 0 {
			t.Errorf("stale views of version 3: got %+v, want beta with its spec", stale)
		}
		if stale, _ := s.StaleListViews(ctx, 3, "beta", 10); len(stale) != 0 {
			t.Errorf("stale views after beta: got %+v, want none", stale)
		}
	})
}

// TestProvisionedAuth: what the identity provider made is recorded apart
// from the configuration; an edit, which writes every column the operator
// owns, keeps it, and a validator that was never provisioned reads none.
func TestProvisionedAuth(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		v := newValidator("alpha")
		mustCreateValidator(t, s, v)
		if got, _ := s.GetValidator(ctx, "alpha"); got.ProvisionedAuth != nil {
			t.Fatalf("before provisioning: got %+v, want none", got.ProvisionedAuth)
		}
		a := domain.ProvisionedAuth{Audience: "alpha-ledger-api", LedgerAPIClient: "alpha-validator-app", LedgerAPIUser: "sa-1",
			WalletClient: "alpha-wallet-ui", NameServiceClient: "alpha-ans-ui"}
		if err := s.SetProvisionedAuth(ctx, "alpha", a); err != nil {
			t.Fatal(err)
		}
		edit, err := s.GetValidator(ctx, "alpha")
		if err != nil {
			t.Fatal(err)
		}
		edit.ProvisionedAuth = nil // an edit read before the record
		edit.Spec = []byte(`{"imageTag":"0.4.2"}`)
		if err := s.UpdateValidator(ctx, &edit); err != nil {
			t.Fatal(err)
		}
		for _, read := range []func() (domain.Validator, error){
			func() (domain.Validator, error) { return s.GetValidator(ctx, "alpha") },
			func() (domain.Validator, error) { in, err := s.ValidatorIntent(ctx, "alpha"); return in.Validator, err },
		} {
			got, err := read()
			if err != nil || got.ProvisionedAuth == nil || *got.ProvisionedAuth != a {
				t.Fatalf("got %+v, %v; want %+v", got.ProvisionedAuth, err, a)
			}
		}
		if err := s.SetProvisionedAuth(ctx, "missing", a); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("unknown validator: got %v, want not found", err)
		}
	})
}

// TestUpdateValidatorReadMeanwhile: an update of a row written since it was
// read (another edit, the leader recording the wallet user or clearing the
// secrets it wrote) changes nothing and is a Conflict caused by
// ErrWrittenMeanwhile; read again, it is written.
func TestUpdateValidatorReadMeanwhile(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		v := newValidator("alpha")
		v.WalletUserID, v.PendingSecrets = "", "sealed-1"
		mustCreateValidator(t, s, v)
		for _, write := range []struct {
			what string
			do   func() error
		}{
			{"an edit", func() error {
				e, _ := s.GetValidator(ctx, "alpha")
				e.Spec = []byte(`{"imageTag":"0.4.2"}`)
				return s.UpdateValidator(ctx, &e)
			}},
			{"the wallet user", func() error { return s.SetWalletUser(ctx, "alpha", "user-2") }},
			{"the secrets cleared", func() error { return s.ClearPendingSecrets(ctx, "alpha", "sealed-1") }},
		} {
			read, _ := s.GetValidator(ctx, "alpha")
			if err := write.do(); err != nil {
				t.Fatalf("%s: %v", write.what, err)
			}
			want, _ := s.GetValidator(ctx, "alpha")
			stale := read
			stale.Spec = []byte(`{"imageTag":"9.9.9"}`)
			err := s.UpdateValidator(ctx, &stale)
			if !errors.Is(err, domain.ErrConflict) || !errors.Is(err, domain.ErrWrittenMeanwhile) {
				t.Fatalf("after %s: got %v, want a conflict written meanwhile", write.what, err)
			}
			wantValidator(t, s, want)
		}
		fresh, _ := s.GetValidator(ctx, "alpha")
		fresh.Spec = []byte(`{"imageTag":"9.9.9"}`)
		wantErr(t, s.UpdateValidator(ctx, &fresh), nil)
		wantValidator(t, s, fresh)
		if fresh.WalletUserID != "user-2" || fresh.PendingSecrets != "" {
			t.Fatalf("got wallet user %q, pending secrets %q; want the leader's writes kept", fresh.WalletUserID, fresh.PendingSecrets)
		}
	})
}
