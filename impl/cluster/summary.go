package cluster

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// The gateway's managed informers (Validators, CronJobs) keep summaries
// instead of the objects (a transform): what InStep and CachedState
// read, a few hundred bytes where the decoded Validator
// takes some 17 KB (its spec.config is most of it, never read from the
// cache) and a CronJob some 5 KB.

// objectSummary is the metadata a summary keeps: labels and the annotations
// asked for as key/value pairs (a map costs some 300 bytes however few its
// entries). Its strings are copies: a summary shares no memory with the
// decoded object, which would otherwise stay (with the heap spans around
// it) as long as the cache.
type objectSummary struct {
	name, namespace, resourceVersion string
	uid                              types.UID
	created                          metav1.Time
	labels                           []string // key, value, …
	annotations                      []string // key, value, …
	owners                           []metav1.OwnerReference
}

func summarizeMeta(m metav1.Object, annotations ...string) objectSummary {
	s := objectSummary{
		name:            strings.Clone(m.GetName()),
		namespace:       strings.Clone(m.GetNamespace()),
		resourceVersion: strings.Clone(m.GetResourceVersion()),
		uid:             types.UID(strings.Clone(string(m.GetUID()))),
		created:         m.GetCreationTimestamp(),
	}
	for k, v := range m.GetLabels() {
		s.labels = append(s.labels, intern(k, s.name), intern(v, s.name))
	}
	have := m.GetAnnotations()
	for _, k := range annotations {
		if v, ok := have[k]; ok {
			s.annotations = append(s.annotations, k, strings.Clone(v))
		}
	}
	for _, r := range m.GetOwnerReferences() {
		s.owners = append(s.owners, metav1.OwnerReference{
			APIVersion: intern(r.APIVersion, ""), Kind: intern(r.Kind, ""), Name: intern(r.Name, s.name),
			UID: types.UID(strings.Clone(string(r.UID))), Controller: cloneBool(r.Controller), BlockOwnerDeletion: cloneBool(r.BlockOwnerDeletion),
		})
	}
	return s
}

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	c := *b
	return &c
}

// intern is s, sharing the memory of a constant or of name when equal.
func intern(s, name string) string {
	for _, c := range [...]string{ManagedByLabel, ManagedBy, ValidatorLabel, InstallationLabel, Group + "/" + Version, Kind, name} {
		if s == c {
			return c
		}
	}
	return strings.Clone(s)
}

func pairs(kv []string) map[string]string {
	if len(kv) == 0 {
		return nil
	}
	m := make(map[string]string, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// GetObjectMeta is the metadata kept, as client-go reads it (keys, the
// namespace index) and upToDate compares it.
func (s *objectSummary) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{
		Name:              s.name,
		Namespace:         s.namespace,
		ResourceVersion:   s.resourceVersion,
		UID:               s.uid,
		CreationTimestamp: s.created,
		Labels:            pairs(s.labels),
		Annotations:       pairs(s.annotations),
		OwnerReferences:   s.owners,
	}
}

func (s *objectSummary) annotation(key string) string {
	for i := 0; i < len(s.annotations); i += 2 {
		if s.annotations[i] == key {
			return s.annotations[i+1]
		}
	}
	return ""
}

func (s objectSummary) deepCopy() objectSummary {
	s.labels = slices.Clone(s.labels)
	s.annotations = slices.Clone(s.annotations)
	s.owners = slices.Clone(s.owners)
	return s
}

// validatorSummary is what the managed informer keeps of a Validator.
type validatorSummary struct {
	objectSummary           // the spec hash and disable-user-edit annotations
	externalDatabase bool   // spec.externalDatabase
	databaseUser     string // spec.database.user
	// status.phase and status.databaseReady as stored (nil: absent).
	phase, databaseReady any
}

var _ runtime.Object = (*validatorSummary)(nil)

func (s *validatorSummary) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (s *validatorSummary) DeepCopyObject() runtime.Object {
	c := *s
	c.objectSummary = s.objectSummary.deepCopy()
	return &c
}

func summarize(u *unstructured.Unstructured) *validatorSummary {
	s := &validatorSummary{objectSummary: summarizeMeta(u, specHashAnnotation, domain.DisableUserEditAnnotation)}
	spec, _ := u.Object["spec"].(map[string]any)
	s.externalDatabase, _ = spec["externalDatabase"].(bool)
	s.databaseUser = strings.Clone(specString(spec, "database", "user"))
	status, _ := u.Object["status"].(map[string]any)
	s.phase, s.databaseReady = cloneScalar(status["phase"]), status["databaseReady"]
	return s
}

// cloneScalar copies a string; other values are kept as they are.
func cloneScalar(v any) any {
	if s, ok := v.(string); ok {
		return strings.Clone(s)
	}
	return v
}

// state is the validator's state as the resource's fields say.
func (s *validatorSummary) state() domain.ValidatorState {
	phase := domain.PhasePending
	if p, _ := s.phase.(string); p != "" {
		switch domain.Phase(p) {
		case domain.PhasePending, domain.PhaseRunning, domain.PhaseCompleted:
			phase = domain.Phase(p)
		}
	}
	ready, _ := s.databaseReady.(bool)
	return domain.ValidatorState{
		Phase:           phase,
		DatabaseRunning: ready && !s.externalDatabase,
		DisableUserEdit: strings.EqualFold(s.annotation(domain.DisableUserEditAnnotation), "true"),
	}
}

// cronJobSummary is what the CronJob informer keeps of a CronJob: the
// metadata InStep compares (labels, the spec hash, owners), no spec.
type cronJobSummary struct {
	objectSummary // the spec hash annotation
}

var _ runtime.Object = (*cronJobSummary)(nil)

func (s *cronJobSummary) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (s *cronJobSummary) DeepCopyObject() runtime.Object {
	return &cronJobSummary{s.objectSummary.deepCopy()}
}

// summarizeCronJob is the CronJob informer's transform (idempotent).
func summarizeCronJob(obj any) (any, error) {
	if cj, ok := obj.(metav1.Object); ok {
		if _, isSummary := obj.(*cronJobSummary); !isSummary {
			return &cronJobSummary{summarizeMeta(cj, specHashAnnotation)}, nil
		}
	}
	return obj, nil
}
