package intent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clustergw "github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/keyring"
)

// world is the database, cluster and identity provider of one test, in
// memory, recording what was asked of them.
type world struct {
	mu        sync.Mutex
	rows      map[string]domain.Validator
	cluster   map[string]domain.ValidatorState // resources, with their state
	secrets   map[string]domain.ValidatorSecrets
	present   map[string]domain.WrittenSecrets // which Secrets exist with their key
	applied   map[string]domain.Validator      // the last one applied, by name
	users     map[string]string                // validator → claim
	clients   map[string]string                // validator → claim of its clients
	passwords map[string]string                // validator → its wallet user's password
	applies   int
	failNext  map[string]error
	changes   []string // the database's change feed
	creates   int      // wallet users created (not adopted)
	// conditions: the Provisioned condition of each resource.
	conditions map[string]metav1.Condition
	// uiDomain: the validators' UIs are at https://wallet.<name>.<uiDomain>
	// and https://ans.<name>.<uiDomain>; none when empty.
	uiDomain   string
	provisions int // calls of ProvisionClients that succeeded
	// remade counts, per validator, the times its clients were made anew
	// after being deleted: a client made anew has another service-account
	// user and secret, as Keycloak's has.
	remade map[string]int
}

func newWorld() *world {
	return &world{rows: map[string]domain.Validator{}, cluster: map[string]domain.ValidatorState{},
		secrets: map[string]domain.ValidatorSecrets{}, present: map[string]domain.WrittenSecrets{}, applied: map[string]domain.Validator{},
		users: map[string]string{}, clients: map[string]string{}, passwords: map[string]string{}, failNext: map[string]error{},
		conditions: map[string]metav1.Condition{}, remade: map[string]int{}}
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
	if err := s.fail("ValidatorNames"); err != nil {
		return nil, err
	}
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

func (s store) ClearPendingSecrets(_ context.Context, name, sealed string) error {
	if err := s.fail("ClearPendingSecrets"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.rows[name]; ok && v.PendingSecrets == sealed {
		v.PendingSecrets = ""
		s.rows[name] = v
	}
	return nil
}

func (s store) SetProvisionError(_ context.Context, name, message string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.rows[name]; ok {
		v.ProvisionError = message
		s.rows[name] = v
	}
	return nil
}

func (s store) TakeChanges(context.Context, int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.changes
	s.changes = nil
	return out, nil
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

func (c cluster) ApplyValidator(_ context.Context, v domain.Validator, _ *domain.PruneSchedule, _ domain.WrittenSecrets) error {
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

func (c cluster) PutSecrets(_ context.Context, name string, s domain.ValidatorSecrets, d domain.SecretDefaults) error {
	if err := c.fail("PutSecrets"); err != nil {
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
	return testKey, nil
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

func (c cluster) CachedCondition(name, _ string) *metav1.Condition {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cond, ok := c.conditions[name]; ok {
		return &cond
	}
	return nil
}

func (c cluster) ApplyCondition(_ context.Context, name string, cond metav1.Condition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.cluster[name]; !ok {
		return domain.NotFound("no validator %s", name)
	}
	c.conditions[name] = cond
	return nil
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

func (c cluster) WatchRecords(context.Context, func(string)) {}

// ValidatorSource: the world's resources are no API server's, so nothing
// comes of them.
func (c cluster) ValidatorSource(...predicate.Predicate) source.Source {
	return source.Func(func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request]) error { return nil })
}

func (c cluster) WaitForSync(context.Context) bool { return true }

type identity struct{ *world }

func (i identity) CreateWalletUser(_ context.Context, validator, claim, password string) (domain.CreatedUser, error) {
	if err := i.fail("CreateWalletUser"); err != nil {
		return domain.CreatedUser{}, err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if have, ok := i.users[validator]; ok && have != claim {
		return domain.CreatedUser{}, domain.Conflict("user exists")
	} else if !ok {
		i.users[validator] = claim
		i.passwords[validator] = password
		i.creates++
	}
	return domain.CreatedUser{ID: "id-" + validator, Username: validator + "_walletuser", TemporaryPassword: password}, nil
}

func (i identity) UserExists(_ context.Context, id string) (bool, error) {
	if err := i.fail("UserExists"); err != nil {
		return false, err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	_, ok := i.users[strings.TrimPrefix(id, "id-")]
	return ok, nil
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
	if _, ok := i.clients[validator]; !ok {
		if _, made := i.remade[validator]; made {
			i.remade[validator]++
		} else {
			i.remade[validator] = 0
		}
	}
	i.clients[validator] = claim
	i.provisions++
	wallet, ans := i.uiURLs(validator)
	return domain.ProvisionedAuth{Audience: validator + "-ledger-api", LedgerAPIClient: validator + "-validator-app",
		LedgerAPIUser: "sa-" + validator + i.suffix(validator), WalletClient: validator + "-wallet-ui", NameServiceClient: validator + "-ans-ui",
		WalletURL: wallet, NameServiceURL: ans}, nil
}

func (i identity) UIURLs(validator string) (string, string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.uiURLs(validator)
}

// uiURLs: i.mu held.
func (w *world) uiURLs(validator string) (string, string) {
	if w.uiDomain == "" {
		return "", ""
	}
	return "https://wallet." + validator + "." + w.uiDomain, "https://ans." + validator + "." + w.uiDomain
}

func (i identity) ClientSecret(_ context.Context, validator, claim string) (string, error) {
	if err := i.fail("ClientSecret"); err != nil {
		return "", err
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.clients[validator] != claim {
		return "", domain.Conflict("not ours")
	}
	return "client-secret-" + validator + i.suffix(validator), nil
}

// suffix tells the clients made anew from the first ones: "" for the first,
// "-<n>" for the nth made anew; i.mu held.
func (w *world) suffix(validator string) string {
	if n := w.remade[validator]; n > 0 {
		return fmt.Sprint("-", n)
	}
	return ""
}

func (identity) Endpoints() domain.AuthEndpoints {
	return domain.AuthEndpoints{Authority: "http://idp.test/realms/r", JWKS: "http://idp.test/realms/r/certs",
		Config: "http://idp.test/realms/r/.well-known/openid-configuration", Token: "http://idp.test/realms/r/token"}
}

// testKey is the cluster's password key of the tests (cluster.PasswordKey).
var testKey = []byte("0123456789abcdef0123456789abcdef")

// run starts a controller over w, under a Manager of its own on the test
// API server, until the test ends.
func run(t *testing.T, w *world, edit ...func(*Options)) *Controller {
	t.Helper()
	if apiServer == nil {
		t.Skip(skipNoServer)
	}
	const ns = "intent-test"
	o := Options{Store: store{w}, Cluster: cluster{w}, Identity: identity{w}, Namespace: ns, Changes: 10 * time.Millisecond}
	for _, e := range edit {
		e(&o)
	}
	c := New(o)
	scheme, err := clustergw.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	skip := true // every test builds the controller under a Manager of its own
	cached := ns
	if o.Charts {
		cached = "" // the releases' namespaces too
	}
	mgr, err := manager.New(apiServer, manager.Options{Scheme: scheme, Cache: clustergw.CacheOptions(cached, 0),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip}})
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

// record does what the create handler does: the row, with the secret
// values given sealed, and its name in the change feed.
func (w *world) record(t *testing.T, name string, customAuth bool, secrets domain.ValidatorSecrets) domain.Validator {
	t.Helper()
	v := domain.Validator{Name: name, Claim: "claim-" + name, Phase: domain.PhasePending, CustomAuth: customAuth, Spec: []byte(`{"name":"` + name + `"}`)}
	sealed, err := keyring.Seal(testKey, name, v.Claim, secrets)
	if err != nil {
		t.Fatal(err)
	}
	v.PendingSecrets = sealed
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rows[name] = v
	w.changes = append(w.changes, name)
	return v
}

func (w *world) row(name string) domain.Validator {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rows[name]
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

// provisioned: the wallet user (with the derived temporary password), the
// clients, the resource, the Secrets given, the row's secrets cleared.
func (w *world) provisioned(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.rows[name]
	_, resource := w.cluster[name]
	return ok && resource && v.WalletUserID != "" && v.ProvisionedAuth != nil && v.PendingSecrets == "" &&
		w.passwords[name] == keyring.TemporaryPassword(testKey, name, v.Claim) && w.secrets[name].OnboardingSecret == "s3cret"
}

// TestProvision: a recorded create that another replica's handler wrote
// reaches the running controller through the change feed and is
// provisioned whole, whichever step fails once on the way (retried, never
// undone).
func TestProvision(t *testing.T) {
	for _, fail := range []string{"", "CreateWalletUser", "ProvisionClients", "SetProvisionedAuth", "ApplyValidator", "PutSecrets", "ClearPendingSecrets"} {
		t.Run("fails once: "+fail, func(t *testing.T) {
			w := newWorld()
			if fail != "" {
				w.failNext[fail] = errors.New("injected")
			}
			run(t, w)
			w.record(t, "alpha", false, domain.ValidatorSecrets{OnboardingSecret: "s3cret"})
			eventually(t, func() bool { return w.provisioned("alpha") })
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.creates != 1 {
				t.Fatalf("wallet users created: got %d, want 1", w.creates)
			}
			if msg := w.rows["alpha"].ProvisionError; msg != "" {
				t.Fatalf("provision error after success: got %q, want none", msg)
			}
		})
	}
}

// TestProvisionFailureShown: a wallet user of the name that this create did
// not make is a conflict recorded in the row and shown by the resource's
// Provisioned condition (the validator stays PENDING, applied without the
// identity provider's auth); once the user is gone the validator is
// provisioned and the condition turns True.
func TestProvisionFailureShown(t *testing.T) {
	w := newWorld()
	w.users["omega"] = "someone else's"
	c := New(Options{Store: store{w}, Cluster: cluster{w}, Identity: identity{w}})
	w.record(t, "omega", false, domain.ValidatorSecrets{OnboardingSecret: "s3cret"})
	if _, err := c.Reconcile(context.Background(), "omega"); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("got %v, want a conflict", err)
	}
	v := w.row("omega")
	if !strings.Contains(v.ProvisionError, "omega_walletuser") || v.Phase != domain.PhasePending {
		t.Fatalf("row: provision error %q, phase %s; want the user named, PENDING", v.ProvisionError, v.Phase)
	}
	if _, resource, _ := w.has("omega"); !resource || w.users["omega"] != "someone else's" || w.applied["omega"].ProvisionedAuth != nil {
		t.Fatal("not applied, applied with auth despite the conflict, or the other user was touched")
	}
	if cond := w.conditions["omega"]; cond.Status != metav1.ConditionFalse || cond.Reason != ReasonWalletUserConflict ||
		!strings.Contains(cond.Message, "omega_walletuser") {
		t.Fatalf("condition %+v, want False, WalletUserConflict, naming the user", cond)
	}
	w.mu.Lock()
	delete(w.users, "omega")
	w.mu.Unlock()
	if _, err := c.Reconcile(context.Background(), "omega"); err != nil {
		t.Fatal(err)
	}
	if !w.provisioned("omega") || w.row("omega").ProvisionError != "" {
		t.Fatalf("after the user was removed: %+v, want provisioned and the error cleared", w.row("omega"))
	}
	if cond := w.conditions["omega"]; cond.Status != metav1.ConditionTrue || cond.Reason != ReasonProvisioned {
		t.Fatalf("condition %+v, want True, Provisioned", cond)
	}
}

// TestEditKeepsValuesRecordedMeanwhile: values an edit records while the
// leader writes earlier ones are not cleared with them.
func TestEditKeepsValuesRecordedMeanwhile(t *testing.T) {
	w := newWorld()
	c := New(Options{Store: store{w}, Cluster: cluster{w}, Identity: identity{w}})
	v := w.record(t, "delta", true, domain.ValidatorSecrets{OnboardingSecret: "s3cret"})
	if _, err := c.Reconcile(context.Background(), "delta"); err != nil {
		t.Fatal(err)
	}
	first := v.PendingSecrets
	// The edit lands after the leader read the row: the leader's clear of
	// what it wrote must leave the edit's values.
	edited, err := keyring.Seal(testKey, "delta", v.Claim, domain.ValidatorSecrets{DatabasePassword: "rotated"})
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	v = w.rows["delta"]
	v.PendingSecrets = edited
	w.rows["delta"] = v
	w.mu.Unlock()
	if err := (store{w}).ClearPendingSecrets(context.Background(), "delta", first); err != nil {
		t.Fatal(err)
	}
	if w.row("delta").PendingSecrets != edited {
		t.Fatal("the edit's values were cleared with the earlier ones")
	}
	if _, err := c.Reconcile(context.Background(), "delta"); err != nil {
		t.Fatal(err)
	}
	if got := w.secrets["delta"].DatabasePassword; got != "rotated" || w.row("delta").PendingSecrets != "" {
		t.Fatalf("database password %q, pending %q; want rotated written and cleared", got, w.row("delta").PendingSecrets)
	}
}

// TestStartFinishesRecordedCreates: a recorded create that a crash left
// half done is finished at start (the user adopted by its claim, not made
// twice); a resource without a record goes; a recorded validator is applied.
func TestStartFinishesRecordedCreates(t *testing.T) {
	w := newWorld()
	w.record(t, "half", false, domain.ValidatorSecrets{OnboardingSecret: "s3cret"})
	w.users["half"] = "claim-half" // made before the crash, not recorded
	w.passwords["half"] = keyring.TemporaryPassword(testKey, "half", "claim-half")
	w.rows["live"] = domain.Validator{Name: "live", Phase: domain.PhasePending, CustomAuth: true}
	w.cluster["ghost"] = domain.ValidatorState{}
	run(t, w)
	if !w.provisioned("half") || w.creates != 0 {
		t.Fatalf("half-done create: %+v, users created %d; want finished, the user adopted", w.row("half"), w.creates)
	}
	if _, resource, _ := w.has("ghost"); resource {
		t.Fatal("a resource without a record was kept")
	}
	if _, resource, _ := w.has("live"); !resource {
		t.Fatal("a recorded validator was not applied")
	}
}

// TestStartWaitsOutAFailingRead: the leader's first read of the database
// failing (busy, a connection lost) is tried again; it does not stop the
// Manager, and the validators are reconciled once it succeeds.
func TestStartWaitsOutAFailingRead(t *testing.T) {
	w := newWorld()
	w.rows["live"] = domain.Validator{Name: "live", Phase: domain.PhasePending, CustomAuth: true}
	w.failNext["ValidatorNames"] = errors.New("database is locked")
	run(t, w)
	eventually(t, func() bool { _, resource, _ := w.has("live"); return resource })
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
