package workload

import (
	"context"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/cluster"
)

// A workload watch's handler keeps the records of its kind before it
// enqueues the Validator that controls the object, as Owns would: none
// for an object no Validator controls, both for one whose controller
// changed. An apply's answer takes the place of the record the apply was
// decided on, never of one the watch put since, and never brings back one
// the watch removed.
func TestWorkloadEvents(t *testing.T) {
	record := func(rv, controller string, owners ...metav1.OwnerReference) *cluster.WorkloadRecord {
		if controller != "" {
			owners = append(owners, metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Validator", Name: controller, UID: "u-" + types.UID(controller), Controller: ptr.To(true)})
		}
		return cluster.RecordWorkload(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "v1-participant", Namespace: "ns", ResourceVersion: rv, OwnerReferences: owners}})
	}
	notOurs := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "v1", UID: "rs", Controller: ptr.To(true)}
	mere := metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Validator", Name: "v3", UID: "u-v3"}
	v1, v1Later, v2, other, plain := record("1", "v1"), record("2", "v1"), record("3", "v2"), record("4", "", notOurs), record("5", "", mere)
	key := types.NamespacedName{Namespace: "ns", Name: "v1-participant"}
	x := newWorkloads()
	h := x.events(deploymentKind)
	ctx := context.Background()
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	steps := []struct {
		name   string
		do     func(q queue)
		queued []string
		kept   *cluster.WorkloadRecord
	}{
		{"created", func(q queue) { h.Create(ctx, event.CreateEvent{Object: v1}, q) }, []string{"v1"}, v1},
		{"updated", func(q queue) { h.Update(ctx, event.UpdateEvent{ObjectOld: v1, ObjectNew: v1Later}, q) }, []string{"v1"}, v1Later},
		{"controller changed", func(q queue) { h.Update(ctx, event.UpdateEvent{ObjectOld: v1Later, ObjectNew: v2}, q) }, []string{"v1", "v2"}, v2},
		{"controlled by a ReplicaSet", func(q queue) { h.Update(ctx, event.UpdateEvent{ObjectOld: v2, ObjectNew: other}, q) }, []string{"v2"}, other},
		{"owned, not controlled", func(q queue) { h.Update(ctx, event.UpdateEvent{ObjectOld: other, ObjectNew: plain}, q) }, nil, plain},
		{"deleted", func(q queue) { h.Delete(ctx, event.DeleteEvent{Object: plain}, q) }, nil, nil},
		{"a Service of the same name is another object", func(q queue) {
			x.events(serviceKind).Create(ctx, event.CreateEvent{Object: v1}, q)
		}, []string{"v1"}, nil},
	}
	for _, s := range steps {
		if got := queued(s.do); !slices.Equal(got, s.queued) {
			t.Errorf("%s: queued %v, want %v", s.name, got, s.queued)
		}
		if got := x.get(deploymentKind, key); got != s.kept {
			t.Errorf("%s: kept %+v, want %+v", s.name, got, s.kept)
		}
	}

	// The answers to applies.
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	none := x.lookup(deploymentKind, key)
	created, newer := record("7", "v1"), record("8", "v1")
	x.answered(deploymentKind, none, created)
	if got := x.get(deploymentKind, key); got != created {
		t.Errorf("the answer to the apply that created it: kept %+v, want the answer", got)
	}
	before := x.lookup(deploymentKind, key)
	h.Update(ctx, event.UpdateEvent{ObjectOld: created, ObjectNew: newer}, q)
	x.answered(deploymentKind, before, record("9", "v1"))
	if got := x.get(deploymentKind, key); got != newer {
		t.Errorf("an answer to an apply decided on a record the watch replaced since: kept %+v, want the watch's", got)
	}
	h.Delete(ctx, event.DeleteEvent{Object: newer}, q)
	none = x.lookup(deploymentKind, key)
	made := record("10", "v1")
	h.Create(ctx, event.CreateEvent{Object: made}, q)
	h.Delete(ctx, event.DeleteEvent{Object: made}, q)
	x.answered(deploymentKind, none, made)
	if got := x.get(deploymentKind, key); got != nil {
		t.Errorf("the answer to an apply that made an object the watch saw come and go: kept %+v, want none", got)
	}
}
