// Package cluster is the gateway to the Kubernetes cluster that runs the
// validators: client-go in production (Kube), a simulated cluster persisted
// in the data directory for the embedded default (Simulated). Both keep the
// same conventions (resource spec layout, Secret names and keys, backup
// CronJob) and report the same domain errors.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// SimulatedOptions tune the simulated cluster; zero values take the defaults.
type SimulatedOptions struct {
	// A validator is PENDING until RunningAfter has passed since its
	// creation, then RUNNING until CompletedAfter, then COMPLETED.
	// Defaults 2 s and 5 s.
	RunningAfter   time.Duration
	CompletedAfter time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Namespace is the namespace named in messages; default "default".
	Namespace string
}

// Defaults of SimulatedOptions.
const (
	DefaultRunningAfter   = 2 * time.Second
	DefaultCompletedAfter = 5 * time.Second
)

// stateFile holds the simulated cluster in its directory.
const stateFile = "state.json"

// Simulated is the cluster of the embedded default: no Kubernetes, the same
// semantics as Kube. Its state lives in <dir>/state.json so that it survives
// restarts. It keeps Secret names and keys, never Secret values.
type Simulated struct {
	dir  string
	opts SimulatedOptions

	mu    sync.Mutex
	state *simState
}

// simState is state.json. Objects mirror what Kube writes.
type simState struct {
	// Validators by name: the resource's labels, annotations and spec (the
	// same layout as the Validator resource's spec).
	Validators map[string]*simValidator `json:"validators"`
	// Secrets by name: their key names.
	Secrets map[string][]string `json:"secrets"`
	// StorageClasses by name.
	StorageClasses []string `json:"storageClasses"`
	// CronJobs by name (<validator>-backup).
	CronJobs map[string]*simCronJob `json:"cronJobs"`
	// Volumes are the backup PVCs by name (<validator>-backups); like on a
	// real cluster they outlive their validator.
	Volumes map[string]*simVolume `json:"volumes"`
}

type simValidator struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Spec        map[string]any    `json:"spec"`
	CreatedAt   time.Time         `json:"createdAt"`
}

type simCronJob struct {
	Validator  string `json:"validator"`
	Schedule   string `json:"schedule"`
	TimeZone   string `json:"timeZone"`
	Suspend    bool   `json:"suspend"`
	MaxBackups int32  `json:"maxBackups"`
	Volume     string `json:"volume"`
}

type simVolume struct {
	Validator    string `json:"validator"`
	StorageClass string `json:"storageClass,omitempty"`
	Size         string `json:"size"`
}

// OpenSimulated opens (creating) the simulated cluster in dir with the
// default options.
func OpenSimulated(dir string) (*Simulated, error) {
	return OpenSimulatedWith(dir, SimulatedOptions{})
}

// OpenSimulatedWith opens (creating) the simulated cluster in dir. A new
// cluster has the storage class "standard".
func OpenSimulatedWith(dir string, opts SimulatedOptions) (*Simulated, error) {
	if opts.RunningAfter == 0 {
		opts.RunningAfter = DefaultRunningAfter
	}
	if opts.CompletedAfter == 0 {
		opts.CompletedAfter = DefaultCompletedAfter
	}
	if opts.CompletedAfter < opts.RunningAfter {
		return nil, fmt.Errorf("simulated cluster: CompletedAfter (%s) is before RunningAfter (%s)", opts.CompletedAfter, opts.RunningAfter)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("simulated cluster: %w", err)
	}
	s := &Simulated{dir: dir, opts: opts}
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		st := &simState{StorageClasses: []string{"standard"}}
		st.init()
		if err := s.save(st); err != nil {
			return nil, err
		}
		s.state = st
	case err != nil:
		return nil, fmt.Errorf("simulated cluster: %w", err)
	default:
		st := &simState{}
		if err := json.Unmarshal(data, st); err != nil {
			return nil, fmt.Errorf("simulated cluster: %s: %w", filepath.Join(dir, stateFile), err)
		}
		st.init()
		s.state = st
	}
	return s, nil
}

func (st *simState) init() {
	if st.Validators == nil {
		st.Validators = map[string]*simValidator{}
	}
	if st.Secrets == nil {
		st.Secrets = map[string][]string{}
	}
	if st.CronJobs == nil {
		st.CronJobs = map[string]*simCronJob{}
	}
	if st.Volumes == nil {
		st.Volumes = map[string]*simVolume{}
	}
}

// save writes st atomically: a temporary file renamed over state.json.
func (s *Simulated) save(st *simState) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("simulated cluster: %w", err)
	}
	f, err := os.CreateTemp(s.dir, ".state-*.json")
	if err != nil {
		return fmt.Errorf("simulated cluster: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(s.dir, stateFile))
	}
	if err != nil {
		return fmt.Errorf("simulated cluster: saving state: %w", err)
	}
	return nil
}

// update runs fn on a copy of the state and keeps the copy only when fn
// succeeds and the copy is saved.
func (s *Simulated) update(fn func(st *simState) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := json.Marshal(s.state)
	if err != nil {
		return fmt.Errorf("simulated cluster: %w", err)
	}
	next := &simState{}
	if err := json.Unmarshal(data, next); err != nil {
		return fmt.Errorf("simulated cluster: %w", err)
	}
	next.init()
	if err := fn(next); err != nil {
		return err
	}
	if err := s.save(next); err != nil {
		return err
	}
	s.state = next
	return nil
}

func (s *Simulated) read(fn func(st *simState)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.state)
}

// Ping tells whether the simulated cluster's state can be written.
func (s *Simulated) Ping(context.Context) error {
	f, err := os.CreateTemp(s.dir, ".ping-*")
	if err != nil {
		return domain.Unavailable("simulated cluster is not writable: %v", err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(filepath.Clean(name))
}

// AddSecret creates or replaces a Secret that holds keys (values are not kept).
func (s *Simulated) AddSecret(name string, keys ...string) error {
	if name == "" {
		return domain.Invalid("name", "must not be empty")
	}
	return s.update(func(st *simState) error {
		k := slices.Clone(keys)
		slices.Sort(k)
		st.Secrets[name] = slices.Compact(k)
		return nil
	})
}

// AddStorageClass creates a storage class; an existing one is kept.
func (s *Simulated) AddStorageClass(name string) error {
	if name == "" {
		return domain.Invalid("name", "must not be empty")
	}
	return s.update(func(st *simState) error {
		if !slices.Contains(st.StorageClasses, name) {
			st.StorageClasses = append(st.StorageClasses, name)
			slices.Sort(st.StorageClasses)
		}
		return nil
	})
}

// SetDisableUserEdit sets or removes the validator's disable-user-edit
// annotation, as an operator does with kubectl.
func (s *Simulated) SetDisableUserEdit(name string, on bool) error {
	return s.update(func(st *simState) error {
		v, ok := st.Validators[name]
		if !ok {
			return domain.NotFound("validator %q does not exist in the cluster", name)
		}
		if on {
			if v.Annotations == nil {
				v.Annotations = map[string]string{}
			}
			v.Annotations[domain.DisableUserEditAnnotation] = "true"
		} else {
			delete(v.Annotations, domain.DisableUserEditAnnotation)
		}
		return nil
	})
}

// CheckReferences fails with domain.Invalid naming the field of the first
// object that does not exist: Secrets, then Secret keys, then StorageClasses.
func (s *Simulated) CheckReferences(_ context.Context, refs domain.References) error {
	var err error
	s.read(func(st *simState) {
		ns := s.opts.Namespace
		for _, r := range refs.Secrets {
			if _, ok := st.Secrets[r.Name]; !ok {
				err = domain.Invalid(r.Field, "secret %q does not exist in namespace %q", r.Name, ns)
				return
			}
		}
		for _, r := range refs.SecretKeys {
			keys, ok := st.Secrets[r.Name]
			switch {
			case !ok && !r.Optional:
				err = domain.Invalid(r.Field, "secret %q does not exist in namespace %q", r.Name, ns)
				return
			case !ok:
			case !slices.Contains(keys, r.Key) && !r.Optional:
				err = domain.Invalid(r.Field, "secret %q has no key %q", r.Name, r.Key)
				return
			}
		}
		for _, r := range refs.StorageClasses {
			if !slices.Contains(st.StorageClasses, r.Name) {
				err = domain.Invalid(r.Field, "storage class %q does not exist", r.Name)
				return
			}
		}
	})
	return err
}

// ApplyValidator creates or updates the validator (an update keeps
// annotations, creation time and the recorded Secrets).
func (s *Simulated) ApplyValidator(_ context.Context, v domain.Validator, prune *domain.PruneSchedule) error {
	if v.Name == "" {
		return domain.Invalid("name", "must not be empty")
	}
	spec, err := validatorSpec(v, prune)
	if err != nil {
		return err
	}
	return s.update(func(st *simState) error {
		cur, ok := st.Validators[v.Name]
		if !ok {
			cur = &simValidator{CreatedAt: s.opts.Now().UTC()}
			st.Validators[v.Name] = cur
		}
		if refs, ok := cur.Spec["secrets"]; ok {
			spec["secrets"] = refs
		}
		cur.Spec = spec
		cur.Labels = mergeLabels(cur.Labels, labelsFor(v.Name))
		return nil
	})
}

// WriteSecrets records the Secrets whose values are given.
func (s *Simulated) WriteSecrets(_ context.Context, validator string, secrets domain.ValidatorSecrets) error {
	return s.update(func(st *simState) error {
		v, ok := st.Validators[validator]
		if !ok {
			return domain.NotFound("validator %q does not exist in the cluster", validator)
		}
		refs := map[string]any{}
		for _, sl := range secretSlots(validator, secrets) {
			if sl.value != "" && !slices.Contains(st.Secrets[sl.name], sl.key) {
				st.Secrets[sl.name] = append(st.Secrets[sl.name], sl.key)
				slices.Sort(st.Secrets[sl.name])
			}
			if _, ok := st.Secrets[sl.name]; ok {
				refs[sl.field] = secretRef(sl)
			}
		}
		if len(refs) > 0 {
			v.Spec["secrets"] = refs
		}
		return nil
	})
}

// DeleteValidator removes the backup CronJob, the Secrets and the
// validator; absent objects are fine. The backup volume stays.
func (s *Simulated) DeleteValidator(_ context.Context, name string) error {
	return s.update(func(st *simState) error {
		delete(st.CronJobs, BackupCronJobName(name))
		for _, sl := range secretSlots(name, domain.ValidatorSecrets{}) {
			delete(st.Secrets, sl.name)
		}
		delete(st.Validators, name)
		return nil
	})
}

func (s *Simulated) stateOf(v *simValidator) domain.ValidatorState {
	age := s.opts.Now().Sub(v.CreatedAt)
	status := map[string]any{"phase": string(domain.PhasePending)}
	switch {
	case age >= s.opts.CompletedAfter:
		status = map[string]any{"phase": string(domain.PhaseCompleted), "databaseReady": true}
	case age >= s.opts.RunningAfter:
		status = map[string]any{"phase": string(domain.PhaseRunning), "databaseReady": true}
	}
	return stateOf(v.Annotations, v.Spec, status)
}

// ValidatorState reports one validator's state; domain.ErrNotFound when absent.
func (s *Simulated) ValidatorState(_ context.Context, name string) (domain.ValidatorState, error) {
	var (
		out domain.ValidatorState
		err error
	)
	s.read(func(st *simState) {
		v, ok := st.Validators[name]
		if !ok {
			err = domain.NotFound("validator %q does not exist in the cluster", name)
			return
		}
		out = s.stateOf(v)
	})
	return out, err
}

// ValidatorStates reports every validator's state.
func (s *Simulated) ValidatorStates(context.Context) (map[string]domain.ValidatorState, error) {
	out := map[string]domain.ValidatorState{}
	s.read(func(st *simState) {
		for name, v := range st.Validators {
			out[name] = s.stateOf(v)
		}
	})
	return out, nil
}

// ApplyBackupSchedule creates or updates the backup CronJob (and the backup
// volume when absent); a Deleted schedule suspends the CronJob.
func (s *Simulated) ApplyBackupSchedule(_ context.Context, validator string, sched *domain.BackupSchedule) error {
	if sched == nil {
		return s.update(func(st *simState) error {
			delete(st.CronJobs, BackupCronJobName(validator))
			return nil
		})
	}
	b := *sched
	if err := checkBackupSchedule(b); err != nil {
		return err
	}
	return s.update(func(st *simState) error {
		v, ok := st.Validators[b.Validator]
		if !ok {
			return domain.NotFound("validator %q does not exist in the cluster", b.Validator)
		}
		if external, _ := v.Spec["externalDatabase"].(bool); external && !b.Deleted {
			return errExternalDatabase(b.Validator)
		}
		volume := BackupPVCName(b.Validator)
		if _, ok := st.Volumes[volume]; !ok && !b.Deleted {
			st.Volumes[volume] = &simVolume{
				Validator:    b.Validator,
				StorageClass: specString(v.Spec, "storageClass"),
				Size:         DefaultBackupStorage,
			}
		}
		st.CronJobs[BackupCronJobName(b.Validator)] = &simCronJob{
			Validator:  b.Validator,
			Schedule:   b.Cron,
			TimeZone:   backupTimeZone,
			Suspend:    b.Deleted,
			MaxBackups: b.MaxBackups,
			Volume:     volume,
		}
		return nil
	})
}

// Resource reads a validator as a Validator resource; domain.ErrNotFound
// when absent.
func (s *Simulated) Resource(_ context.Context, name string) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	s.read(func(st *simState) {
		if v, ok := st.Validators[name]; ok {
			out = &unstructured.Unstructured{Object: map[string]any{"spec": runtime.DeepCopyJSONValue(v.Spec)}}
			out.SetName(name)
			out.SetLabels(v.Labels)
			out.SetAnnotations(v.Annotations)
		}
	})
	if out == nil {
		return nil, domain.NotFound("validator %q does not exist in the cluster", name)
	}
	return out, nil
}

// BackupCronJob reads a validator's backup CronJob; domain.ErrNotFound when
// absent.
func (s *Simulated) BackupCronJob(_ context.Context, validator string) (*batchv1.CronJob, error) {
	var out *batchv1.CronJob
	s.read(func(st *simState) {
		if j, ok := st.CronJobs[BackupCronJobName(validator)]; ok {
			suspend := j.Suspend
			out = &batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: j.Schedule, Suspend: &suspend}}
			out.Name = BackupCronJobName(validator)
		}
	})
	if out == nil {
		return nil, domain.NotFound("cron job %q does not exist", BackupCronJobName(validator))
	}
	return out, nil
}
