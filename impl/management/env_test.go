package management_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/management"
)

// env is a whole server (SQLite, the simulated cluster, the local identity
// provider) whose clock the test moves and whose parts can be made to fail.
type env struct {
	*apitest.Server
	clock   *clock
	sim     *cluster.Simulated
	simDir  string
	faults  *faults
	idpFile string
}

func start(t *testing.T) *env {
	t.Helper()
	e := &env{clock: &clock{now: time.Date(2026, 11, 22, 18, 36, 0, 0, time.UTC)}, faults: &faults{}}
	e.simDir = t.TempDir()
	sim, err := cluster.OpenSimulatedWith(e.simDir, cluster.SimulatedOptions{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.sim = sim
	e.Server = apitest.Start(t, apitest.Options{App: []app.Option{app.WithManagement(func(o *management.Options) {
		o.Now = e.clock.Now
		o.Cluster = faultyCluster{Cluster: sim, faults: e.faults}
		o.Identity = faultyIdentity{Identity: o.Identity, faults: e.faults}
		o.Store = faultyStore{Store: o.Store, faults: e.faults}
	})}})
	e.idpFile = filepath.Join(e.App.Config.DataDir, "idp", "users.json")
	return e
}

// advance moves the clock and lets the server see the cluster's new phases.
func (e *env) advance(t *testing.T, d time.Duration) {
	t.Helper()
	e.clock.Add(d)
	if err := e.App.Management.SyncStatesOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// clusterState is the simulated cluster's persisted state, read as a user
// of kubectl would see the objects.
type clusterState struct {
	Validators map[string]struct {
		Annotations map[string]string `json:"annotations"`
		Spec        map[string]any    `json:"spec"`
	} `json:"validators"`
	Secrets map[string][]string `json:"secrets"`
	Volumes map[string]struct {
		StorageClass string `json:"storageClass"`
	} `json:"volumes"`
	CronJobs map[string]struct {
		Schedule   string `json:"schedule"`
		Suspend    bool   `json:"suspend"`
		MaxBackups int32  `json:"maxBackups"`
	} `json:"cronJobs"`
}

func (e *env) cluster(t *testing.T) clusterState {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(e.simDir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st clusterState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// idpUsers are the usernames the local identity provider holds.
func (e *env) idpUsers(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(e.idpFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if u, ok := v["username"].(string); ok {
				names = append(names, u)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	return names
}

func (e *env) row(t *testing.T, name string) (domain.Validator, bool) {
	t.Helper()
	v, err := e.App.Store.GetValidator(context.Background(), name)
	if errors.Is(err, domain.ErrNotFound) {
		return v, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return v, true
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// faults makes named steps fail: before the real call, or after it (the step
// did its work and then reported an error, as a half-done write does).
type faults struct {
	mu     sync.Mutex
	before map[string]error
	after  map[string]error
}

var errInjected = errors.New("injected failure")

func (f *faults) failBefore(op string) { f.set(&f.before, op, errInjected) }
func (f *faults) failAfter(op string)  { f.set(&f.after, op, errInjected) }

// failBeforeWith makes op fail with err (a typed failure, such as an
// unreachable cluster).
func (f *faults) failBeforeWith(op string, err error) { f.set(&f.before, op, err) }

func (f *faults) set(m *map[string]error, op string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *m == nil {
		*m = map[string]error{}
	}
	(*m)[op] = err
}

func (f *faults) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.before, f.after = nil, nil
}

func (f *faults) around(op string, call func() error) error {
	f.mu.Lock()
	before, after := f.before[op], f.after[op]
	f.mu.Unlock()
	if before != nil {
		return before
	}
	if err := call(); err != nil {
		return err
	}
	return after
}

type faultyCluster struct {
	management.Cluster
	faults *faults
}

func (c faultyCluster) ApplyValidator(ctx context.Context, v domain.Validator, p *domain.PruneSchedule) error {
	return c.faults.around("cluster.ApplyValidator", func() error { return c.Cluster.ApplyValidator(ctx, v, p) })
}

func (c faultyCluster) WriteSecrets(ctx context.Context, name string, s domain.ValidatorSecrets) error {
	return c.faults.around("cluster.WriteSecrets", func() error { return c.Cluster.WriteSecrets(ctx, name, s) })
}

func (c faultyCluster) DeleteValidator(ctx context.Context, name string) error {
	return c.faults.around("cluster.DeleteValidator", func() error { return c.Cluster.DeleteValidator(ctx, name) })
}

func (c faultyCluster) ApplyBackupSchedule(ctx context.Context, name string, b *domain.BackupSchedule) error {
	return c.faults.around("cluster.ApplyBackupSchedule", func() error { return c.Cluster.ApplyBackupSchedule(ctx, name, b) })
}

type faultyIdentity struct {
	management.Identity
	faults *faults
}

func (i faultyIdentity) CreateWalletUser(ctx context.Context, validator, claim string) (domain.CreatedUser, error) {
	var u domain.CreatedUser
	err := i.faults.around("identity.CreateWalletUser", func() (err error) {
		u, err = i.Identity.CreateWalletUser(ctx, validator, claim)
		return err
	})
	return u, err
}

type faultyStore struct {
	management.Store
	faults *faults
}

func (s faultyStore) UpdateValidator(ctx context.Context, v *domain.Validator) error {
	return s.faults.around("store.UpdateValidator", func() error { return s.Store.UpdateValidator(ctx, v) })
}

func (s faultyStore) CreatePruneSchedule(ctx context.Context, p *domain.PruneSchedule) error {
	return s.faults.around("store.CreatePruneSchedule", func() error { return s.Store.CreatePruneSchedule(ctx, p) })
}

func (s faultyStore) SaveBackupSchedule(ctx context.Context, b *domain.BackupSchedule) error {
	return s.faults.around("store.SaveBackupSchedule", func() error { return s.Store.SaveBackupSchedule(ctx, b) })
}
