package workload

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/validator-manager/validator-manager/impl/cluster"
)

// The Pod watch's handler keeps each validator's Pod records before it
// enqueues the validator, and enqueues only for a Pod that comes, goes,
// moves to another validator or changes what it tells the status.
func TestPodEvents(t *testing.T) {
	record := func(name, validator, waiting string) *cluster.PodRecord {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "1",
			Labels: map[string]string{ValidatorLabel: validator, ComponentLabel: Participant}}}
		if waiting != "" {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "participant",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting, Message: "m"}}}}
		}
		return cluster.RecordOf(p)
	}
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }
	a, aFailing, aOther, b := record("p", "v1", ""), record("p", "v1", "ErrImagePull"), record("p", "v1", ""), record("p", "v2", "")
	aOther.ResourceVersion = "2"
	x := newPods()
	h := x.events()
	ctx := context.Background()
	steps := []struct {
		name     string
		do       func(q workqueue.TypedRateLimitingInterface[reconcile.Request])
		queued   []string
		v1, v2   int // Pods kept of v1 and v2
		v1Reason string
	}{
		{"created", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, event.CreateEvent{Object: a}, q)
		}, []string{"v1"}, 1, 0, ""},
		{"updated, same cause: kept, not queued", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: a, ObjectNew: aOther}, q)
		}, nil, 1, 0, ""},
		{"cannot start", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: aOther, ObjectNew: aFailing}, q)
		}, []string{"v1"}, 1, 0, "ErrImagePull"},
		{"relabelled to another validator", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Update(ctx, event.UpdateEvent{ObjectOld: aFailing, ObjectNew: b}, q)
		}, []string{"v1", "v2"}, 0, 1, ""},
		{"deleted", func(q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(ctx, event.DeleteEvent{Object: b}, q)
		}, []string{"v2"}, 0, 0, ""},
	}
	for _, s := range steps {
		if got := queued(s.do); !slices.Equal(got, s.queued) {
			t.Errorf("%s: queued %v, want %v", s.name, got, s.queued)
		}
		v1, v2 := x.of(key("v1")), x.of(key("v2"))
		if len(v1) != s.v1 || len(v2) != s.v2 {
			t.Errorf("%s: kept %d Pods of v1 and %d of v2, want %d and %d", s.name, len(v1), len(v2), s.v1, s.v2)
		}
		if len(v1) == 1 && v1[0].Reason != s.v1Reason {
			t.Errorf("%s: v1's Pod says %q, want %q", s.name, v1[0].Reason, s.v1Reason)
		}
	}
	if len(x.byName) != 0 {
		t.Errorf("validators without Pods are still kept: %v", x.byName)
	}
}

// queued runs do on a new queue and returns the names it queued, sorted.
func queued(do func(q workqueue.TypedRateLimitingInterface[reconcile.Request])) []string {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	do(q)
	var names []string
	for q.Len() > 0 {
		r, _ := q.Get()
		names = append(names, r.Name)
		q.Done(r)
	}
	slices.Sort(names)
	return names
}
