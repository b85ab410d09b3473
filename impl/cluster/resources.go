package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// The Application custom resource: same group and version as the Validator.
const (
	ApplicationKind     = "Application"
	ApplicationResource = "applications"
)

// ApplicationGVR is the group/version/resource of the Application custom resource.
var ApplicationGVR = schema.GroupVersionResource{Group: Group, Version: Version, Resource: ApplicationResource}

// resources lists the namespace's resources of kind, whatever wrote them,
// from the cache, by name. Applications are read from the cache itself: the
// Manager's client reads unstructured objects from the API server.
func (k *Kube) resources(ctx context.Context, kind domain.ResourceKind) ([]resourceObject, error) {
	if err := k.served(kind); err != nil {
		return nil, err
	}
	var out []resourceObject
	switch kind {
	case domain.KindValidator:
		l := &v1alpha1.ValidatorList{}
		if err := k.client.List(ctx, l, client.InNamespace(k.namespace)); err != nil {
			return nil, translate("list validators", err)
		}
		for i := range l.Items {
			out = append(out, validatorObject(&l.Items[i]))
		}
	case domain.KindApplication:
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(ApplicationGVK.GroupVersion().WithKind(ApplicationKind + "List"))
		if err := k.cache.List(ctx, l, client.InNamespace(k.namespace)); err != nil {
			return nil, translate("list applications", err)
		}
		for i := range l.Items {
			out = append(out, applicationObject(&l.Items[i]))
		}
	}
	slices.SortFunc(out, func(a, b resourceObject) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// resource is the namespace's resource of kind and name from the cache.
func (k *Kube) resource(ctx context.Context, kind domain.ResourceKind, name string) (resourceObject, error) {
	if err := k.served(kind); err != nil {
		return resourceObject{}, err
	}
	key := types.NamespacedName{Namespace: k.namespace, Name: name}
	var (
		o   resourceObject
		err error
	)
	switch kind {
	case domain.KindValidator:
		v := &v1alpha1.Validator{}
		err = k.client.Get(ctx, key, v)
		o = validatorObject(v)
	case domain.KindApplication:
		u := unstructuredOf(ApplicationGVK)
		err = k.cache.Get(ctx, key, u)
		o = applicationObject(u)
	}
	if client.IgnoreNotFound(err) == nil && err != nil {
		return resourceObject{}, domain.NotFound("%s %q does not exist in namespace %q", strings.ToLower(string(kind)), name, k.namespace)
	}
	return o, translate(fmt.Sprintf("read %s %q", strings.ToLower(string(kind)), name), err)
}

// resourceObject is a resource as release 2.0 returns it.
type resourceObject struct {
	name, resourceVersion string
	object, status        any
}

func validatorObject(v *v1alpha1.Validator) resourceObject {
	v.APIVersion, v.Kind = ValidatorGVK.ToAPIVersionAndKind()
	v.ManagedFields = nil // the cache keeps one entry for the gateway (secretRefsEntry)
	return resourceObject{name: v.Name, resourceVersion: v.ResourceVersion, object: v, status: v.Status}
}

func applicationObject(u *unstructured.Unstructured) resourceObject {
	status, ok := u.Object["status"].(map[string]any)
	if !ok {
		status = map[string]any{}
	}
	return resourceObject{name: u.GetName(), resourceVersion: u.GetResourceVersion(), object: u.Object, status: status}
}

// served fails when kind was not served at start or the cache has not synced.
func (k *Kube) served(kind domain.ResourceKind) error {
	if !k.synced.Load() {
		return domain.Unavailable("cluster: the gateway's caches are not started (or the gateway is closed)")
	}
	switch kind {
	case domain.KindValidator:
		return nil
	case domain.KindApplication:
		if !k.applications.Load() {
			return domain.Unavailable("cluster: the %s resource (%s) was not served when the server started; apply deploy/crds, then restart the server", kind, ApplicationGVR.GroupResource())
		}
		return nil
	}
	return domain.NotFound("unknown resource kind %q", kind)
}

// ResourceList is every resource of kind, as a JSON array by name, from the cache.
func (k *Kube) ResourceList(kind domain.ResourceKind) ([]byte, error) {
	objs, err := k.resources(context.TODO(), kind)
	if err != nil {
		return nil, err
	}
	list := make([]any, len(objs))
	for i, o := range objs {
		list[i] = o.object
	}
	return json.Marshal(list)
}

// ResourceListVersion, the lists' ETag, changes whenever ResourceList would,
// alike on every replica: highest resourceVersion and length (for deletions).
func (k *Kube) ResourceListVersion(kind domain.ResourceKind) (string, error) {
	objs, err := k.resources(context.TODO(), kind)
	if err != nil {
		return "", err
	}
	var highest int64
	for _, o := range objs {
		if rv, err := strconv.ParseInt(o.resourceVersion, 10, 64); err == nil && rv > highest {
			highest = rv
		}
	}
	return strconv.FormatInt(highest, 10) + "." + strconv.Itoa(len(objs)), nil
}

// ResourceObject is one resource (minus managedFields), as JSON.
func (k *Kube) ResourceObject(kind domain.ResourceKind, name string) ([]byte, error) {
	o, err := k.resource(context.TODO(), kind, name)
	if err != nil {
		return nil, err
	}
	return json.Marshal(o.object)
}

// ResourceStatus is one resource's status as JSON ({} when it has none).
func (k *Kube) ResourceStatus(kind domain.ResourceKind, name string) ([]byte, error) {
	o, err := k.resource(context.TODO(), kind, name)
	if err != nil {
		return nil, err
	}
	return json.Marshal(o.status)
}

// SyncState tells, per informer of the gateway, whether it has synced (operational metrics).
func (k *Kube) SyncState() map[string]bool {
	state := map[string]bool{}
	if informers := k.informers.Load(); informers != nil {
		for name, inf := range *informers {
			state[name] = inf.HasSynced()
		}
	}
	return state
}
