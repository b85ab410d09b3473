package cluster

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

// onChange calls f, until remove, with each object of obj's kind of the
// namespace that changes, once the cache's reads show it (an informer
// updates its store before it tells its handlers).
func (k *Kube) onChange(ctx context.Context, obj client.Object, f func(o metav1.Object, deleted bool)) (remove func(), err error) {
	informer, err := k.cache.GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("cluster: %T informer: %w", obj, err)
	}
	call := func(o any, deleted bool) {
		if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		if m, ok := o.(metav1.Object); ok && m.GetNamespace() == k.namespace {
			f(m, deleted)
		}
	}
	reg, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { call(o, false) },
		UpdateFunc: func(_, o any) { call(o, false) },
		DeleteFunc: func(o any) { call(o, true) },
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return func() { _ = informer.RemoveEventHandler(reg) }, nil
}

// WatchRecords calls f, until ctx ends, with the managed validator of each
// changed Secret or backup CronJob, once the gateway's reads show it.
func (k *Kube) WatchRecords(ctx context.Context, f func(validator string)) {
	for obj, validator := range map[client.Object]func(metav1.Object) string{&corev1.Secret{}: k.SecretValidator, &batchv1.CronJob{}: k.cronJobValidator} {
		// After Start, an error is a context that ended.
		remove, err := k.onChange(ctx, obj, func(o metav1.Object, _ bool) {
			if name := validator(o); name != "" {
				f(name)
			}
		})
		if err == nil {
			context.AfterFunc(ctx, remove)
		}
	}
}

// cronJobValidator names the managed validator whose resource controls cj, else "".
func (k *Kube) cronJobValidator(cj metav1.Object) string {
	ref := metav1.GetControllerOf(cj)
	if ref == nil || ref.Kind != Kind || ref.APIVersion != ValidatorGVK.GroupVersion().String() || k.cachedValidator(ref.Name) == nil {
		return ""
	}
	return ref.Name
}

// OnValidatorDeleted calls f with each Validator that leaves the cache; call it before Start.
func (k *Kube) OnValidatorDeleted(f func(name string)) {
	k.deleted = append(k.deleted, f)
}

func (k *Kube) notifyDeleted(ctx context.Context) error {
	if len(k.deleted) == 0 {
		return nil
	}
	_, err := k.onChange(ctx, &v1alpha1.Validator{}, func(o metav1.Object, deleted bool) {
		if deleted {
			for _, f := range k.deleted {
				f(o.GetName())
			}
		}
	})
	return err
}
