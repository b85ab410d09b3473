package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// ValidatorRevision is the cached resourceVersion of the Validator and of
// its ledger API auth Secret ("": none), for release 2.0's proxy; false: no
// such Validator cached.
func (k *Kube) ValidatorRevision(name string) (validator, secret string, ok bool) {
	v := cached[v1alpha1.Validator](context.Background(), k, name)
	if v == nil {
		return "", "", false
	}
	if s := cached[corev1.Secret](context.Background(), k, domain.LedgerAPIAuthSecretName(name)); s != nil {
		secret = s.ResourceVersion
	}
	return v.ResourceVersion, secret, true
}

// TypedValidator reads the Validator of that name from the cache, or from
// the API server when the cache has none yet (just written, or not synced).
func (k *Kube) TypedValidator(ctx context.Context, name string) (*v1alpha1.Validator, error) {
	key := types.NamespacedName{Namespace: k.namespace, Name: name}
	v := &v1alpha1.Validator{}
	if k.synced.Load() && k.client.Get(ctx, key, v) == nil {
		return v, nil
	}
	v = &v1alpha1.Validator{}
	err := k.api.Get(ctx, key, v)
	if apierrors.IsNotFound(err) {
		return nil, domain.NotFound("validator %q not found", name)
	}
	if err != nil {
		return nil, translate(fmt.Sprintf("read validator %q", name), err)
	}
	return v, nil
}

// ValidatorSource is a controller's source of the cache's Validators.
func (k *Kube) ValidatorSource(preds ...predicate.Predicate) source.Source {
	return source.Kind[client.Object](k.cache, &v1alpha1.Validator{}, &handler.EnqueueRequestForObject{}, preds...)
}
