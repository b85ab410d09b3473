package nodesim

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// The node's room, as the scheduler's NodeResourcesFit filter accounts it
// (docs/decisions.md, "It leaves Pending what does not fit").

// usage is what Pods request of a node, in the scheduler's units.
type usage struct{ milliCPU, memory, pods int64 }

func (u usage) plus(v usage) usage {
	return usage{u.milliCPU + v.milliCPU, u.memory + v.memory, u.pods + v.pods}
}

func (u usage) minus(v usage) usage {
	return usage{u.milliCPU - v.milliCPU, u.memory - v.memory, u.pods - v.pods}
}

// requested is what the scheduler counts p as requesting: the larger of its
// containers' summed and each init container's (sidecars started before it
// added), plus the Pod's overhead; one Pod.
func requested(p *corev1.Pod) usage {
	list := func(l corev1.ResourceList) usage {
		return usage{l.Cpu().MilliValue(), l.Memory().Value(), 0}
	}
	var sum, sidecars, init usage
	for i := range p.Spec.Containers {
		sum = sum.plus(list(p.Spec.Containers[i].Resources.Requests))
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		r := list(c.Resources.Requests)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sum, sidecars = sum.plus(r), sidecars.plus(r)
			init = usage{max(init.milliCPU, sidecars.milliCPU), max(init.memory, sidecars.memory), 0}
			continue
		}
		r = r.plus(sidecars)
		init = usage{max(init.milliCPU, r.milliCPU), max(init.memory, r.memory), 0}
	}
	out := usage{max(sum.milliCPU, init.milliCPU), max(sum.memory, init.memory), 1}
	return out.plus(list(p.Spec.Overhead))
}

// room is the node's account of the Pods bound to it.
type room struct {
	allocatable usage

	mu     sync.Mutex
	loaded bool
	bound  map[types.NamespacedName]usage // Pods that hold room, and what they request
	used   usage
	// waiting are the Pods left unbound for lack of room.
	waiting map[types.NamespacedName]bool
	// retry is the Pod controller's source of waiting Pods when room is freed.
	retry chan event.GenericEvent
}

func newRoom(capacity corev1.ResourceList) *room {
	return &room{
		allocatable: usage{capacity.Cpu().MilliValue(), capacity.Memory().Value(), capacity.Pods().Value()},
		bound:       map[types.NamespacedName]usage{},
		waiting:     map[types.NamespacedName]bool{},
		retry:       make(chan event.GenericEvent, 1024),
	}
}

// holdsRoom tells whether p, as the cache shows it, occupies node.
func holdsRoom(p *corev1.Pod, node string) bool {
	return p.Spec.NodeName == node && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// load fills the account from the cache's Pods, once, before its first
// use: the Pods bound before a restart hold their room. r.mu held.
func (r *room) load(ctx context.Context, c client.Reader, node string) error {
	if r.loaded {
		return nil
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("nodesim: the node's Pods: %w", err)
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; holdsRoom(p, node) {
			u := requested(p)
			r.bound[client.ObjectKeyFromObject(p)] = u
			r.used = r.used.plus(u)
		}
	}
	r.loaded = true
	return nil
}

// observe accounts for the Pod of key as the cache shows it now (nil: it
// is gone). Before the load there is nothing to correct: it reads the cache.
func (r *room) observe(key types.NamespacedName, p *corev1.Pod, node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p == nil {
		delete(r.waiting, key)
	}
	if !r.loaded {
		return
	}
	old, had := r.bound[key]
	switch {
	case p != nil && holdsRoom(p, node):
		u := requested(p)
		r.bound[key] = u
		r.used = r.used.minus(old).plus(u)
	case p != nil && p.Spec.NodeName == "":
		// Reserved and being bound, the cache not showing it yet: it keeps
		// its room (reserve put it there).
	case had:
		r.release(key, old)
	}
}

// release frees what key held and wakes the waiting Pods. r.mu held.
func (r *room) release(key types.NamespacedName, u usage) {
	delete(r.bound, key)
	r.used = r.used.minus(u)
	for k := range r.waiting {
		delete(r.waiting, k)
		p := &corev1.Pod{}
		p.Namespace, p.Name = k.Namespace, k.Name
		select {
		case r.retry <- event.GenericEvent{Object: p}:
		default:
			// The source is behind: this Pod keeps waiting for the next
			// release (its own changes enqueue it too).
			r.waiting[k] = true
			return
		}
	}
}

// reserve takes room for p before it is bound, or says why the scheduler
// would not bind it: "" when it fits.
func (r *room) reserve(ctx context.Context, c client.Reader, p *corev1.Pod, node string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.load(ctx, c, node); err != nil {
		return "", err
	}
	key := client.ObjectKeyFromObject(p)
	u := requested(p)
	used := r.used.minus(r.bound[key]) // a retried bind holds its own room already
	var reasons []string
	if used.pods+1 > r.allocatable.pods {
		reasons = append(reasons, "Too many pods")
	}
	if u.milliCPU > 0 && u.milliCPU > r.allocatable.milliCPU-used.milliCPU {
		reasons = append(reasons, "Insufficient cpu")
	}
	if u.memory > 0 && u.memory > r.allocatable.memory-used.memory {
		reasons = append(reasons, "Insufficient memory")
	}
	if len(reasons) > 0 {
		r.waiting[key] = true
		return noRoom(reasons), nil
	}
	delete(r.waiting, key)
	r.used = used.plus(u)
	r.bound[key] = u
	return "", nil
}

// unreserve gives back the room of a bind that did not happen.
func (r *room) unreserve(p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := client.ObjectKeyFromObject(p)
	if u, ok := r.bound[key]; ok {
		r.release(key, u)
	}
}

// noRoom is the scheduler's FitError message for the one node's reasons.
func noRoom(reasons []string) string {
	sort.Strings(reasons)
	for i, r := range reasons {
		reasons[i] = "1 " + r
	}
	why := strings.Join(reasons, ", ")
	return fmt.Sprintf("0/1 nodes are available: %s. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.", why)
}
