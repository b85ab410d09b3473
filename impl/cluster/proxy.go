package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// What release 2.0's proxy reads of a validator: its Validator resource (any
// Validator of the namespace, as 2.0 lists them) and the version of its
// ledger API auth Secret, from the caches, so that an unchanged validator
// costs two map lookups per call.

// newSecretVersions is an informer over every Secret of the namespace that
// keeps only each Secret's name and resourceVersion (secretStamp: no data):
// it tells that a Secret changed, and the value is read from the API server
// when it has. Unfiltered, because a Secret made by hand for a Validator made
// by hand carries none of our labels.
func newSecretVersions(core kubernetes.Interface, namespace string, resync time.Duration) (informers.SharedInformerFactory, cache.SharedIndexInformer, error) {
	f := informers.NewSharedInformerFactoryWithOptions(core, resync, informers.WithNamespace(namespace))
	inf := f.Core().V1().Secrets().Informer()
	if err := inf.SetTransform(stampSecret); err != nil {
		return nil, nil, fmt.Errorf("cluster: %w", err)
	}
	return f, inf, nil
}

// secretStamp is what the Secret informer caches of a Secret: its key, and
// its resourceVersion when it is a ledger API auth Secret (some 100 bytes
// where the metadata alone would take several hundred).
type secretStamp struct {
	name, namespace, resourceVersion string
	// validator is set on a validator's Secret (by its name), hasKey when
	// it holds the key the validator's pods read (the intent controller
	// writes what is missing).
	validator string
	hasKey    bool
}

var _ runtime.Object = (*secretStamp)(nil)

func (s *secretStamp) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

func (s *secretStamp) DeepCopyObject() runtime.Object { c := *s; return &c }

// GetObjectMeta is what client-go reads (meta.Accessor): the key.
func (s *secretStamp) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: s.name, Namespace: s.namespace, ResourceVersion: s.resourceVersion}
}

// stampSecret is the Secret informer's transform (idempotent).
func stampSecret(obj any) (any, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return obj, nil
	}
	st := &secretStamp{name: strings.Clone(s.Name), namespace: strings.Clone(s.Namespace)}
	if validator, key, ok := slotOf(s.Name); ok {
		st.validator, st.hasKey = strings.Clone(validator), hasKey(s, key)
	}
	if strings.HasSuffix(s.Name, domain.LedgerAPIAuthSecretName("")) {
		st.resourceVersion = strings.Clone(s.ResourceVersion)
	}
	return st, nil
}

// ValidatorRevision is the resourceVersion of the Validator resource of that
// name in the cache and that of its ledger API auth Secret ("" when there is
// none); ok is false when the cache has no such Validator or has not synced.
func (k *Kube) ValidatorRevision(name string) (validator, secret string, ok bool) {
	if !k.synced.Load() {
		return "", "", false
	}
	o, found, err := k.validatorView.informer.GetIndexer().GetByKey(k.namespace + "/" + name)
	if err != nil || !found {
		return "", "", false
	}
	v, _ := o.(*viewObject)
	if v == nil {
		return "", "", false
	}
	if s, found, err := k.secretVersions.GetIndexer().GetByKey(k.namespace + "/" + domain.LedgerAPIAuthSecretName(name)); err == nil && found {
		if st, _ := s.(*secretStamp); st != nil {
			secret = st.resourceVersion
		}
	}
	return v.resourceVersion, secret, true
}

// TypedValidator reads the Validator resource of that name, decoded: from
// the cache, or from the API server when the cache has none yet (a resource
// just written, or a cache not synced); domain.ErrNotFound when neither has
// it.
func (k *Kube) TypedValidator(ctx context.Context, name string) (*v1alpha1.Validator, error) {
	raw, err := k.ResourceObject(domain.KindValidator, name)
	if err != nil {
		u, err := k.Resource(ctx, name)
		if errors.Is(err, domain.ErrNotFound) {
			return nil, domain.NotFound("validator %q not found", name)
		}
		if err != nil {
			return nil, err
		}
		if raw, err = u.MarshalJSON(); err != nil {
			return nil, domain.Internal(err)
		}
	}
	v := &v1alpha1.Validator{}
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, domain.Unavailable("validator %q: its Validator resource cannot be read: %v", name, err)
	}
	return v, nil
}

// OnValidatorDeleted calls f with the name of every Validator resource of
// the namespace that leaves the cache.
func (k *Kube) OnValidatorDeleted(f func(name string)) error {
	_, err := k.validatorView.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(*viewObject); ok {
				f(o.name)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	return nil
}
