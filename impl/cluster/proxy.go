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

// What release 2.0's proxy reads of a validator: its Validator resource (any
// Validator of the namespace, as 2.0 lists them) and the version of its
// ledger API auth Secret, from the caches, so that an unchanged validator
// costs two reads of the cache per call.

// ValidatorRevision is the resourceVersion of the Validator resource of that
// name in the cache and that of its ledger API auth Secret ("" when there is
// none); ok is false when the cache has no such Validator or has not synced.
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

// TypedValidator reads the Validator resource of that name, decoded: from
// the cache, or from the API server when the cache has none yet (a resource
// just written, or a cache not synced); domain.ErrNotFound when neither has
// it.
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

// ValidatorSource is a controller's source of the changes of the
// Validators of the Manager's cache, which the gateway reads.
func (k *Kube) ValidatorSource(preds ...predicate.Predicate) source.Source {
	return source.Kind[client.Object](k.cache, &v1alpha1.Validator{}, &handler.EnqueueRequestForObject{}, preds...)
}
