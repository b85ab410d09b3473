package cluster

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// validatorSummary is what the gateway reads of a Validator resource from
// its managed informer (InStep, ValidatorStates, the simulated kubelet).
// The informer's cache holds this in place of the resource (a transform):
// a few hundred bytes instead of the whole decoded object, whose spec.config
// is most of it and is never read from the cache.
type validatorSummary struct {
	// Name, namespace, uid, resourceVersion, creationTimestamp and labels;
	// of the annotations, the spec hash and disable-user-edit only.
	metav1.ObjectMeta
	externalDatabase bool   // spec.externalDatabase
	databaseUser     string // spec.database.user
	// status.phase and status.databaseReady as stored (nil: absent).
	phase, databaseReady any
}

var _ runtime.Object = (*validatorSummary)(nil)

func (s *validatorSummary) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (s *validatorSummary) DeepCopyObject() runtime.Object {
	c := *s
	s.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// summaryAnnotations are the annotations a summary keeps.
var summaryAnnotations = []string{specHashAnnotation, domain.DisableUserEditAnnotation}

// summarize reads the summary of u. It copies what it keeps: the summary
// shares no memory with u (a cache of summaries would otherwise keep parts
// of every decoded object, and the heap spans around them).
func summarize(u *unstructured.Unstructured) *validatorSummary {
	s := &validatorSummary{ObjectMeta: metav1.ObjectMeta{
		Name:              strings.Clone(u.GetName()),
		Namespace:         strings.Clone(u.GetNamespace()),
		UID:               types.UID(strings.Clone(string(u.GetUID()))),
		ResourceVersion:   strings.Clone(u.GetResourceVersion()),
		CreationTimestamp: u.GetCreationTimestamp(),
		Labels:            cloneMap(u.GetLabels()),
		Annotations:       cloneMap(u.GetAnnotations(), summaryAnnotations...),
	}}
	spec, _ := u.Object["spec"].(map[string]any)
	s.externalDatabase, _ = spec["externalDatabase"].(bool)
	s.databaseUser = strings.Clone(specString(spec, "database", "user"))
	status, _ := u.Object["status"].(map[string]any)
	s.phase, s.databaseReady = cloneScalar(status["phase"]), status["databaseReady"]
	return s
}

// cloneMap copies m (only the keys given, when any); nil when empty.
func cloneMap(m map[string]string, keys ...string) map[string]string {
	var out map[string]string
	put := func(k, v string) {
		if out == nil {
			out = make(map[string]string, len(m))
		}
		out[strings.Clone(k)] = strings.Clone(v)
	}
	if len(keys) == 0 {
		for k, v := range m {
			put(k, v)
		}
		return out
	}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			put(k, v)
		}
	}
	return out
}

// cloneScalar copies a string; other values are kept as they are.
func cloneScalar(v any) any {
	if s, ok := v.(string); ok {
		return strings.Clone(s)
	}
	return v
}

// summarizeValidator is the managed informer's transform. It must be
// idempotent: what it returns may come back to it.
func summarizeValidator(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return summarize(u), nil
	}
	return obj, nil
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
		DisableUserEdit: strings.EqualFold(s.Annotations[domain.DisableUserEditAnnotation], "true"),
	}
}
