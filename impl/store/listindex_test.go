package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

// TestListValidatorsInMemory: pages of the list's rows in memory equal the
// sorted table at every offset, after creates out of order, a bulk import,
// deletes and phase changes; the totals equal the table's counts.
func TestListValidatorsInMemory(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		phases := map[string]domain.Phase{}
		for i := range 40 {
			name := fmt.Sprintf("v-%02d", (i*13)%40)
			v := newValidator(name)
			v.Phase = []domain.Phase{domain.PhasePending, domain.PhaseRunning, domain.PhaseCompleted}[i%3]
			mustCreateValidator(t, s, v)
			phases[name] = v.Phase
		}
		check(t, s, phases, "after creates")

		var bulk []domain.Validator
		for i := range 20 {
			v := newValidator(fmt.Sprintf("b-%02d", i))
			v.Phase = domain.PhaseRunning
			bulk = append(bulk, *v)
			phases[v.Name] = v.Phase
		}
		wantErr(t, s.ImportValidators(ctx, bulk), nil)
		check(t, s, phases, "after an import")

		for i := range 60 { // grows one block at the end past its size
			v := newValidator(fmt.Sprintf("z-%02d", i))
			v.Phase = domain.PhasePending
			mustCreateValidator(t, s, v)
			phases[v.Name] = v.Phase
		}
		check(t, s, phases, "after appends")

		for _, name := range []string{"v-00", "v-07", "b-03", "z-59", "z-00"} {
			wantErr(t, s.DeleteValidator(ctx, name), nil)
			delete(phases, name)
		}
		for _, name := range []string{"v-01", "b-10", "z-30"} {
			wantErr(t, s.SyncValidatorState(ctx, name, domain.ValidatorState{Phase: domain.PhaseCompleted}), nil)
			phases[name] = domain.PhaseCompleted
		}
		check(t, s, phases, "after deletes and phase changes")
	})
}

// check compares every page of limits 1, 4 and 7, unfiltered and per phase,
// with the sorted names.
func check(t *testing.T, s *store.Store, phases map[string]domain.Phase, when string) {
	t.Helper()
	for _, phase := range []domain.Phase{"", domain.PhasePending, domain.PhaseRunning, domain.PhaseCompleted} {
		var want []string
		for name, p := range phases {
			if phase == "" || p == phase {
				want = append(want, name)
			}
		}
		sort.Strings(want)
		for _, limit := range []int{1, 4, 7} {
			for offset := 0; offset <= len(want)+1; offset++ {
				page, total, err := s.ListValidators(context.Background(), domain.ValidatorFilter{
					Phase: phase, Page: domain.Page{Offset: offset, Limit: limit},
				})
				wantErr(t, err, nil)
				end := min(offset+limit, len(want))
				var w []string
				if offset < len(want) {
					w = want[offset:end]
				}
				if got := validatorNames(page); total != int64(len(want)) || !reflect.DeepEqual(got, w) {
					t.Fatalf("%s, phase %q, offset %d, limit %d: got %q total %d, want %q total %d",
						when, phase, offset, limit, got, total, w, len(want))
				}
			}
		}
	}
}

// TestListFollowsWrites: the list's rows a store keeps in memory follow
// every write that changes them, whoever writes (this store or another
// process on the same database): totals, pages, list views, creates not
// finished and finished, phase changes, deletes.
func TestListFollowsWrites(t *testing.T) {
	type pair struct{ reader, writer *store.Store }
	pairs := map[string]pair{}
	path := filepath.Join(t.TempDir(), "vm.db")
	lite, err := store.Open("sqlite", path)
	wantErr(t, err, nil)
	t.Cleanup(func() { lite.Close() })
	other, err := store.Open("sqlite", path)
	wantErr(t, err, nil)
	t.Cleanup(func() { other.Close() })
	pairs["sqlite"] = pair{lite, other}
	if os.Getenv("TEST_POSTGRES_DSN") != "" {
		dsn := throwawayPostgres(t)
		pg, err := store.Open("postgres", dsn)
		wantErr(t, err, nil)
		t.Cleanup(func() { pg.Close() })
		pg2, err := store.Open("postgres", dsn)
		wantErr(t, err, nil)
		t.Cleanup(func() { pg2.Close() })
		pairs["postgres"] = pair{pg, pg2}
	}
	for name, p := range pairs {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			list := func(phase domain.Phase) (int64, []string) {
				t.Helper()
				page, total, err := p.reader.ListValidators(ctx, domain.ValidatorFilter{Phase: phase, Page: domain.Page{Limit: 100}})
				wantErr(t, err, nil)
				return total, validatorNames(page)
			}
			check := func(step string, phase domain.Phase, want ...string) {
				t.Helper()
				total, names := list(phase)
				if total != int64(len(want)) || !reflect.DeepEqual(names, want) && len(want) > 0 {
					t.Errorf("%s (phase %q): got %d %v, want %v", step, phase, total, names, want)
				}
			}
			for _, w := range []*store.Store{p.reader, p.writer} {
				for _, n := range []string{"a", "b"} {
					mustCreateValidator(t, w, newValidator(n+fmt.Sprint(w == p.writer)))
				}
			}
			check("four created", "", "afalse", "atrue", "bfalse", "btrue")
			mustCreateValidator(t, p.writer, newValidator("c"))
			check("created by the other store", "", "afalse", "atrue", "bfalse", "btrue", "c")
			wantErr(t, p.writer.SyncValidatorState(ctx, "c", domain.ValidatorState{Phase: domain.PhaseRunning}), nil)
			check("phase changed by the other store", domain.PhaseRunning, "c")
			c, err := p.writer.GetValidator(ctx, "c")
			wantErr(t, err, nil)
			c.ListView, c.ListViewVersion = []byte(`{"edited":true}`), 7
			wantErr(t, p.writer.UpdateValidator(ctx, &c), nil)
			page, _, err := p.reader.ListValidators(ctx, domain.ValidatorFilter{NameContains: "c", Page: domain.Page{Limit: 1}})
			wantErr(t, err, nil)
			if len(page) != 1 || string(page[0].ListView) != `{"edited":true}` || page[0].ListViewVersion != 7 || page[0].Phase != domain.PhaseRunning {
				t.Errorf("edited by the other store: got %+v", page)
			}
			wantErr(t, p.writer.DeleteValidator(ctx, "afalse"), nil)
			check("deleted by the other store", "", "atrue", "bfalse", "btrue", "c")
			wantErr(t, p.reader.DeleteValidator(ctx, "c"), nil)
			check("deleted by this store", domain.PhaseRunning)
		})
	}
}

// TestListPagesDuringWrites: pages read while another goroutine creates
// and changes validators never fail and never show a total smaller than
// the validators created before the page began; afterwards the list is
// the table. Eight readers share generation reads (a page that arrives
// while one is in flight waits for the next), which must still see every
// create that came before the page. (Run with -race: snapshots are
// shared, never written.)
func TestListPagesDuringWrites(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		const n = 60
		var created atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range n {
				v := newValidator(fmt.Sprintf("w-%02d", i))
				if err := s.CreateValidator(ctx, v); err != nil {
					t.Error(err)
					return
				}
				created.Add(1)
				if err := s.SyncValidatorState(ctx, v.Name, domain.ValidatorState{Phase: domain.PhaseRunning}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					before := created.Load()
					page, total, err := s.ListValidators(ctx, domain.ValidatorFilter{Page: domain.Page{Limit: 10}})
					if err != nil || total < before || len(page) != int(min(total, 10)) {
						t.Errorf("got %d rows, total %d (at least %d created), error %v", len(page), total, before, err)
						return
					}
				}
			})
		}
		wg.Wait()
		_, total, err := s.ListValidators(ctx, domain.ValidatorFilter{Phase: domain.PhaseRunning, Page: domain.Page{Limit: 1}})
		wantErr(t, err, nil)
		if total != n {
			t.Fatalf("got %d RUNNING, want %d", total, n)
		}
	})
}
