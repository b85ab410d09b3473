package intent

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clustergw "github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// world is the database, cluster and identity provider of one test, in
// memory, recording what was asked of them.
type world struct {
	mu       sync.Mutex
	rows     map[string]domain.Validator
	cluster  map[string]domain.ValidatorState // resources, with their state
	secrets  map[string]domain.ValidatorSecrets
	present  map[string]domain.WrittenSecrets // which Secrets exist with their key
	applied  map[string]domain.Validator      // the last one applied, by name
	users    map[string]string                // validator → claim
	clients  map[string]string                // validator → claim of its clients
	applies  int
	failNext map[string]error
	block    chan struct{} // when set, CreateWalletUser waits on it
}

func newWorld() *world {
	return &world{rows: map[string]domain.Validator{}, cluster: map[string]domain.ValidatorState{},
		secrets: map[string]domain.ValidatorSecrets{}, present: map[string]domain.WrittenSecrets{}, applied: map[string]domain.Validator{},
		users: map[string]string{}, clients: map[string]string{}, failNext: map[string]error{}}
}

func (w *world) fail(op string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	err := w.failNext[op]
	delete(w.failNext, op)
	return err
}

type store struct{ *world }

func (s store) ValidatorIntent(_ context.Context, name string) (domain.ValidatorIntent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.rows[name]
	if !ok {
		return domain.ValidatorIntent{}, domain.NotFound("no %s", name)
	}
	return domain.ValidatorIntent{Validator: v}, nil
}

func (s store) ValidatorNames(context.Context, string, int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for n := range s.rows {
		out = append(out, n)
	}
	return out, nil
}

func (s store) SetWalletUser(_ context.Context, name, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.rows[name]
	v.WalletUserID = id
	s.rows[name] = v
	return nil
}

func (s store) SetProvisionedAuth(_ context.Context, name string, a domain.ProvisionedAuth) error {
	if err := s.fail("SetProvisionedAuth"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.rows[name]
	v.ProvisionedAuth = &a
	s.rows[name] = v
	return nil
}

func (s store) FinishCreate(_ context.Context, name string) error {
	if err := s.fail("FinishCreate"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.rows[name]
	v.Creating = false
	s.rows[name] = v
	return nil
}

func (s store) DeleteValidator(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rows, name)
	return nil
}

func (s store) SyncValidatorState(_ context.Context, name string, st domain.ValidatorState) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.rows[name]
	v.Phase, v.Immutable = st.Phase, st.DisableUserEdit
	s.rows[name] = v
	return nil
}

type cluster struct{ *world }

func (c cluster) ApplyValidator(_ context.Context, v domain.Validator, _ *domain.PruneSchedule) error {
	if err := c.fail("ApplyValidator"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applies++
	c.applied[v.Name] = v
	if _, ok := c.cluster[v.Name]; !ok {
		c.cluster[v.Name] = domain.ValidatorState{Phase: domain.PhasePending}
	}
	return nil
}

func (c cluster) WriteSecrets(_ context.Context, name string, s domain.ValidatorSecrets) error {
	if err := c.fail("WriteSecrets"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	have, p := c.secrets[name], c.present[name]
	if s.OnboardingSecret != "" {
		have.OnboardingSecret, p.Onboarding = s.OnboardingSecret, true
	}
	if s.LedgerAPIClientSecret != "" {
		have.LedgerAPIClientSecret, p.LedgerAPIAuth = s.LedgerAPIClientSecret, true
	}
	if s.DatabasePassword != "" {
		have.DatabasePassword, p.Database = s.DatabasePassword, true
	}
	c.secrets[name], c.present[name] = have, p
	return nil
}

func (c cluster) DefaultSecrets(_ context.Context, name string, d domain.SecretDefaults) error {
	if err := c.fail("DefaultSecrets"); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	have, p := c.secrets[name], c.present[name]
	if d.LedgerAPIClientSecret != nil && !p.LedgerAPIAuth {
		have.LedgerAPIClientSecret, p.LedgerAPIAuth = *d.LedgerAPIClientSecret, true
	}
	if d.DatabasePassword != nil && !p.Database {
		have.DatabasePassword, p.Database = *d.DatabasePassword, true
	}
	c.secrets[name], c.present[name] = have, p
	return nil
}

func (c cluster) PasswordKey(context.Context) ([]byte, error) {
	return []byte("0123456789abcdef0123456789abcdef"), nil
}

func (c cluster) CachedSecrets(name string) domain.WrittenSecrets {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.present[name]
}

func (c cluster) ApplyBackupSchedule(context.Context, string, *domain.BackupSchedule) error {
	return nil
}

func (c cluster) InStep(in domain.ValidatorIntent) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.cluster[in.Validator.Name]
	return ok
}

func (c cluster) DeleteValidator(_ context.Context, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.cluster, name)
	delete(c.secrets, name)
	delete(c.present, name)
	return nil
}

func (c cluster) CachedState(name string) (domain.ValidatorState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.cluster[name]
	return st, ok
}

func (c cluster) ManagedValidators() ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for n := range c.cluster {
		out = append(out, n)
	}
	return out, nil
}

func (c cluster) Manages(map[string]string) bool { return true }

func (c cluster) SecretValidator(metav1.Object) string { return "" }

func (c cluster) WaitForSync(context.Context) bool { return true }

type identity struct{ *world }

func (i identity) CreateWalletUser(ctx context.Context, validator, claim string) (domain.CreatedUser, error) {
	if i.block != nil {
		select {
		case <-i.block:
		case <-ctx.Done():
			return domain.CreatedUser{}, ctx.Err()
		}
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, ok := i.users[validator]; ok {
		return domain.CreatedUser{}, domain.Conflict("user exists")
	}
	i.users[validator] = claim
	return domain.CreatedUser{ID: "id-" + validator, Username: validator + "_walletuser", TemporaryPassword: "temporary"}, nil
}

func (i identity) DeleteWalletUser(_ context.Context, validator, claim string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.users[validator] == claim {
		delete(i.users, validator)
	}
	return nil
}

func (i identity) ProvisionClients(_ context.Context, validator, claim string) (domain.ProvisionedAuth, error) {
	if err := i.fail("ProvisionClients"); err != nil {
		return domain.ProvisionedAuth{}, err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if have, ok := i.clients[validator]; ok && have != claim {
		return domain.ProvisionedAuth{}, domain.Conflict("client exists")
	}
	i.clients[validator] = claim
	return domain.ProvisionedAuth{Audience: validator + "-ledger-api", LedgerAPIClient: validator + "-validator-app",
		LedgerAPIUser: "sa-" + validator, WalletClient: validator + "-wallet-ui", NameServiceClient: validator + "-ans-ui"}, nil
}

func (i identity) ClientSecret(_ context.Context, validator, claim string) (string, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.clients[validator] != claim {
		return "", domain.Conflict("not ours")
	}
	return "client-secret-" + validator, nil
}

func (i identity) DeleteClients(_ context.Context, validator, claim string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.clients[validator] == claim {
		delete(i.clients, validator)
	}
	return nil
}

func (identity) Endpoints() domain.AuthEndpoints {
	return domain.AuthEndpoints{Authority: "http://idp.test/realms/r", JWKS: "http://idp.test/realms/r/certs",
		Config: "http://idp.test/realms/r/.well-known/openid-configuration", Token: "http://idp.test/realms/r/token"}
}

// run starts a controller over w, under a Manager of its own on the test
// API server, until the test ends.
func run(t *testing.T, w *world, edit ...func(*Options)) *Controller {
	t.Helper()
	if apiServer == nil {
		t.Skip(skipNoServer)
	}
	const ns = "intent-test"
	o := Options{Store: store{w}, Cluster: cluster{w}, Identity: identity{w}, Namespace: ns}
	for _, e := range edit {
		e(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := clustergw.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := manager.New(apiServer, manager.Options{Scheme: scheme, Cache: clustergw.CacheOptions(ns, 0),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually(t, func() bool { return c.Ping(ctx) == nil })
	return c
}

func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
	}
}

// create does what the create handler does.
func create(ctx context.Context, c *Controller, w *world, name string) (*domain.CreatedUser, error) {
	v := domain.Validator{Name: name, Creating: true, Claim: "claim-" + name, Phase: domain.PhasePending, Spec: []byte(`{"name":"` + name + `"}`)}
	cr := c.Expect(name, v.Claim, domain.ValidatorSecrets{OnboardingSecret: "s3cret"})
	w.mu.Lock()
	w.rows[name] = v
	w.mu.Unlock()
	return c.Wait(ctx, cr)
}

func (w *world) has(name string) (row, resource, user bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, row = w.rows[name]
	_, resource = w.cluster[name]
	_, user = w.users[name]
	_, clients := w.clients[name]
	user = user || clients
	return
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name     string
		fail     string // the step that fails once
		wantErr  error
		wantKept bool
	}{
		{name: "every step succeeds", wantKept: true},
		{name: "the cluster refuses the resource", fail: "ApplyValidator", wantErr: domain.ErrInvalid},
		{name: "the cluster refuses the secrets", fail: "WriteSecrets", wantErr: domain.ErrInvalid},
		{name: "the database fails to finish", fail: "FinishCreate", wantErr: domain.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld()
			c := run(t, w)
			if tt.fail != "" {
				w.failNext[tt.fail] = errors.New("injected")
			}
			user, err := create(context.Background(), c, w, "alpha")
			row, resource, hasUser := w.has("alpha")
			if tt.wantKept {
				if err != nil || user == nil || user.TemporaryPassword == "" {
					t.Fatalf("got %v, %v; want the created user", user, err)
				}
				if !row || !resource || !hasUser || w.rows["alpha"].Creating || w.secrets["alpha"].OnboardingSecret != "s3cret" {
					t.Fatalf("got row %v resource %v user %v %+v; want everything, the row finished", row, resource, hasUser, w.rows["alpha"])
				}
				return
			}
			var de *domain.Error
			if !errors.As(err, &de) || de.Code != domain.CodeInternal {
				t.Fatalf("got %v, want an internal error", err)
			}
			// Undone before the answer.
			if row || resource || hasUser {
				t.Fatalf("after a failed create: row %v resource %v user %v; want nothing", row, resource, hasUser)
			}
		})
	}
}

func TestCreateOfAnExistingUserIsInvalid(t *testing.T) {
	w := newWorld()
	w.users["omega"] = "someone else's"
	c := run(t, w)
	_, err := create(context.Background(), c, w, "omega")
	if !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("got %v, want invalid name", err)
	}
	if row, resource, _ := w.has("omega"); row || resource || w.users["omega"] != "someone else's" {
		t.Fatal("the refused create left something, or removed the other user")
	}
}

// TestCreateGivenUp: a handler whose request ends before the controller
// committed answers 503, and the controller undoes the create.
func TestCreateGivenUp(t *testing.T) {
	w := newWorld()
	w.block = make(chan struct{})
	c := run(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := create(ctx, c, w, "beta")
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("got %v, want unavailable", err)
	}
	close(w.block)
	eventually(t, func() bool { row, resource, user := w.has("beta"); return !row && !resource && !user })
}

// TestStartUndoesDeadCreates: a row still creating that no create in this
// process waits for (a crash left it) is undone at start; a finished row is
// applied, and its phase copied from the cluster.
func TestStartUndoesDeadCreates(t *testing.T) {
	w := newWorld()
	w.rows["dead"] = domain.Validator{Name: "dead", Creating: true, Claim: "c1"}
	w.users["dead"] = "c1"
	w.cluster["dead"] = domain.ValidatorState{}
	w.rows["live"] = domain.Validator{Name: "live", Phase: domain.PhasePending}
	w.cluster["ghost"] = domain.ValidatorState{}
	run(t, w)
	if row, resource, user := w.has("dead"); row || resource || user {
		t.Fatalf("dead create: row %v resource %v user %v; want undone", row, resource, user)
	}
	if _, resource, _ := w.has("ghost"); resource {
		t.Fatal("a resource without a record was kept")
	}
	if _, resource, _ := w.has("live"); !resource {
		t.Fatal("a recorded validator was not applied")
	}
}

func TestPhaseCopiedOnlyWhenItDiffers(t *testing.T) {
	w := newWorld()
	w.rows["gamma"] = domain.Validator{Name: "gamma", Phase: domain.PhasePending}
	w.cluster["gamma"] = domain.ValidatorState{Phase: domain.PhaseRunning}
	c := run(t, w)
	if got := w.rows["gamma"].Phase; got != domain.PhaseRunning {
		t.Fatalf("phase: got %s, want RUNNING", got)
	}
	applies := w.applies
	if _, err := c.Reconcile(context.Background(), "gamma"); err != nil {
		t.Fatal(err)
	}
	if w.applies != applies {
		t.Fatalf("a validator in step was applied again (%d → %d)", applies, w.applies)
	}
}
