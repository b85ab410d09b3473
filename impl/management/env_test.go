package management_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/controller/intent"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/management"
)

// env is a whole server (SQLite, the embedded default on the tests' control
// plane, the local identity provider) whose clock the test moves and whose
// parts can be made to fail.
type env struct {
	*apitest.Server
	clock *clock
	// sim is the server's cluster gateway, which its handlers and intent
	// controller use through faultyCluster.
	sim     *cluster.Kube
	faults  *faults
	idpFile string
}

func start(t *testing.T, configure ...func(*config.Config)) *env {
	t.Helper()
	e := &env{clock: &clock{now: time.Date(2026, 11, 22, 18, 36, 0, 0, time.UTC)}, faults: &faults{}}
	e.Server = apitest.Start(t, apitest.Options{Config: func(c *config.Config) {
		for _, f := range configure {
			f(c)
		}
	}, App: []app.Option{
		app.With(func(o *management.Options) {
			o.Now = e.clock.Now
			o.Cluster = faultyCluster{Kube: o.Cluster.(*cluster.Kube), faults: e.faults}
			o.Store = faultyStore{Store: o.Store, faults: e.faults}
		}),
		app.With(func(o *intent.Options) {
			o.Cluster = faultyCluster{Kube: o.Cluster.(*cluster.Kube), faults: e.faults}
			o.Identity = faultyIdentity{Identity: o.Identity, faults: e.faults}
			o.Store = faultyIntentStore{Store: o.Store, faults: e.faults}
		}),
	}})
	e.sim = e.App.Cluster
	e.idpFile = filepath.Join(e.App.Config.DataDir, "idp", "users.json")
	return e
}

// setStatus writes a validator's status as the workload controller does
// from its workloads, and lets the server see the new phase.
func (e *env) setStatus(t *testing.T, name string, phase domain.Phase, databaseReady bool) {
	t.Helper()
	e.provisioned(t, name) // a create answers before the leader made the resource
	if err := e.Kube.SetStatus(context.Background(), name, phase, databaseReady); err != nil {
		t.Fatal(err)
	}
	e.settle(t)
}

// settle waits until the caches hold what the cluster holds and the intent
// controller has copied every phase the cluster reports into the database
// (its Validator events drive it).
func (e *env) settle(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := e.Kube.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		states, err := apitest.ValidatorStates(e.sim)
		if err != nil {
			t.Fatal(err)
		}
		behind := ""
		for name, st := range states {
			row, ok := e.row(t, name)
			if ok && (row.Phase != st.Phase || row.Immutable != st.DisableUserEdit) {
				behind = name
				break
			}
		}
		if behind == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("validator %q: the database did not take the cluster's state", behind)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// reconcileAll has the intent controller reconcile every validator of the
// database and every managed resource now, as it does at start.
func (e *env) reconcileAll(t *testing.T) {
	t.Helper()
	names, err := e.App.Store.ValidatorNames(context.Background(), "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	managed, err := e.sim.ManagedValidators()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range append(names, managed...) {
		if _, err := e.App.Intent.Reconcile(context.Background(), n); err != nil {
			t.Fatalf("reconcile %s: %v", n, err)
		}
	}
}

// reconcile has the intent controller reconcile names now.
func (e *env) reconcile(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, err := e.App.Intent.Reconcile(context.Background(), n); err != nil {
			t.Fatalf("reconcile %s: %v", n, err)
		}
	}
}

// clusterState is what the cluster holds, read with client-go as a user of
// kubectl would see the objects (Secrets by their key names).
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
	e.reconcileAll(t) // what the intent controller makes of the records
	t.Helper()
	ctx := context.Background()
	ns := e.Kube.Namespace
	core := e.Kube.Core
	st := clusterState{}
	vs, err := e.Kube.Validators().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st.Validators = map[string]struct {
		Annotations map[string]string `json:"annotations"`
		Spec        map[string]any    `json:"spec"`
	}{}
	for _, v := range vs.Items {
		spec, _, _ := unstructured.NestedMap(v.Object, "spec")
		// JSON-normalised, as the tests compare numbers as float64.
		raw, _ := json.Marshal(spec)
		var norm map[string]any
		_ = json.Unmarshal(raw, &norm)
		st.Validators[v.GetName()] = struct {
			Annotations map[string]string `json:"annotations"`
			Spec        map[string]any    `json:"spec"`
		}{v.GetAnnotations(), norm}
	}
	secrets, err := core.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st.Secrets = map[string][]string{}
	for _, s := range secrets.Items {
		keys := []string{}
		for k := range s.Data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		st.Secrets[s.Name] = keys
	}
	pvcs, err := core.CoreV1().PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st.Volumes = map[string]struct {
		StorageClass string `json:"storageClass"`
	}{}
	for _, p := range pvcs.Items {
		var class string
		if p.Spec.StorageClassName != nil {
			class = *p.Spec.StorageClassName
		}
		st.Volumes[p.Name] = struct {
			StorageClass string `json:"storageClass"`
		}{class}
	}
	cjs, err := core.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st.CronJobs = map[string]struct {
		Schedule   string `json:"schedule"`
		Suspend    bool   `json:"suspend"`
		MaxBackups int32  `json:"maxBackups"`
	}{}
	for _, c := range cjs.Items {
		var maxBackups int32
		for _, ctr := range c.Spec.JobTemplate.Spec.Template.Spec.Containers {
			for _, env := range ctr.Env {
				if env.Name == "MAX_BACKUPS" {
					n, _ := strconv.Atoi(env.Value)
					maxBackups = int32(n)
				}
			}
		}
		st.CronJobs[c.Name] = struct {
			Schedule   string `json:"schedule"`
			Suspend    bool   `json:"suspend"`
			MaxBackups int32  `json:"maxBackups"`
		}{c.Spec.Schedule, c.Spec.Suspend != nil && *c.Spec.Suspend, maxBackups}
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
	// first runs once, before the next call of its step, and then once
	// after it: a concurrent request that slips in between a handler's
	// read and its write.
	first, then map[string]func()
}

var errInjected = errors.New("injected failure")

func (f *faults) failBefore(op string) { set(f, &f.before, op, errInjected) }
func (f *faults) failAfter(op string)  { set(f, &f.after, op, errInjected) }

// failBeforeWith makes op fail with err (a typed failure, such as an
// unreachable cluster).
func (f *faults) failBeforeWith(op string, err error) { set(f, &f.before, op, err) }

// set records v for op in *m, made on first use.
func set[V any](f *faults, m *map[string]V, op string, v V) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *m == nil {
		*m = map[string]V{}
	}
	(*m)[op] = v
}

// beforeNext runs fn once, before the next call of op.
func (f *faults) beforeNext(op string, fn func()) { set(f, &f.first, op, fn) }

// afterNext runs fn once, after the next call of op has returned.
func (f *faults) afterNext(op string, fn func()) { set(f, &f.then, op, fn) }

func (f *faults) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.before, f.after, f.first, f.then = nil, nil, nil, nil
}

func (f *faults) around(op string, call func() error) error {
	f.mu.Lock()
	before, after, first, then := f.before[op], f.after[op], f.first[op], f.then[op]
	delete(f.first, op)
	delete(f.then, op)
	f.mu.Unlock()
	if first != nil {
		first()
	}
	if then != nil {
		defer then()
	}
	if before != nil {
		return before
	}
	if err := call(); err != nil {
		return err
	}
	return after
}

// faultyCluster is the cluster as both the handlers and the intent
// controller use it.
type faultyCluster struct {
	*cluster.Kube
	faults *faults
}

func (c faultyCluster) ApplyValidator(ctx context.Context, v domain.Validator, p *domain.PruneSchedule, w domain.WrittenSecrets) error {
	return c.faults.around("cluster.ApplyValidator", func() error { return c.Kube.ApplyValidator(ctx, v, p, w) })
}

func (c faultyCluster) PutSecrets(ctx context.Context, name string, s domain.ValidatorSecrets, d domain.SecretDefaults) error {
	return c.faults.around("cluster.PutSecrets", func() error { return c.Kube.PutSecrets(ctx, name, s, d) })
}

func (c faultyCluster) DeleteValidator(ctx context.Context, name string) error {
	return c.faults.around("cluster.DeleteValidator", func() error { return c.Kube.DeleteValidator(ctx, name) })
}

func (c faultyCluster) ApplyBackupSchedule(ctx context.Context, name string, b *domain.BackupSchedule) error {
	return c.faults.around("cluster.ApplyBackupSchedule", func() error { return c.Kube.ApplyBackupSchedule(ctx, name, b) })
}

type faultyIdentity struct {
	intent.Identity
	faults *faults
}

func (i faultyIdentity) CreateWalletUser(ctx context.Context, validator, claim, password string) (domain.CreatedUser, error) {
	var u domain.CreatedUser
	err := i.faults.around("identity.CreateWalletUser", func() (err error) {
		u, err = i.Identity.CreateWalletUser(ctx, validator, claim, password)
		return err
	})
	return u, err
}

type faultyStore struct {
	management.Store
	faults *faults
}

func (s faultyStore) RecordCreate(ctx context.Context, v *domain.Validator, p *domain.PruneSchedule) error {
	return s.faults.around("store.RecordCreate", func() error { return s.Store.RecordCreate(ctx, v, p) })
}

func (s faultyStore) UpdateValidator(ctx context.Context, v *domain.Validator) error {
	return s.faults.around("store.UpdateValidator", func() error { return s.Store.UpdateValidator(ctx, v) })
}

type faultyIntentStore struct {
	intent.Store
	faults *faults
}

func (s faultyIntentStore) SetWalletUser(ctx context.Context, name, id string) error {
	return s.faults.around("store.SetWalletUser", func() error { return s.Store.SetWalletUser(ctx, name, id) })
}

func (s faultyStore) CreatePruneSchedule(ctx context.Context, p *domain.PruneSchedule) error {
	return s.faults.around("store.CreatePruneSchedule", func() error { return s.Store.CreatePruneSchedule(ctx, p) })
}

func (s faultyStore) GetBackupSchedule(ctx context.Context, validator string) (domain.BackupSchedule, error) {
	var b domain.BackupSchedule
	err := s.faults.around("store.GetBackupSchedule", func() (err error) {
		b, err = s.Store.GetBackupSchedule(ctx, validator)
		return err
	})
	return b, err
}

func (s faultyStore) SaveBackupSchedule(ctx context.Context, b *domain.BackupSchedule) error {
	return s.faults.around("store.SaveBackupSchedule", func() error { return s.Store.SaveBackupSchedule(ctx, b) })
}
