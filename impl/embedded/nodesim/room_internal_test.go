package nodesim

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func container(cpu, memory string) corev1.Container {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: l}}
}

// TestRequested: what the scheduler counts a Pod as requesting.
func TestRequested(t *testing.T) {
	sidecar := func(c corev1.Container) corev1.Container {
		c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		return c
	}
	for _, c := range []struct {
		name string
		spec corev1.PodSpec
		want usage
	}{
		{"none", corev1.PodSpec{Containers: []corev1.Container{container("", "")}}, usage{0, 0, 1}},
		{"containers summed", corev1.PodSpec{Containers: []corev1.Container{container("100m", "1Gi"), container("250m", "")}},
			usage{350, 1 << 30, 1}},
		{"an init container larger than the containers", corev1.PodSpec{
			InitContainers: []corev1.Container{container("2", "100Mi")}, Containers: []corev1.Container{container("500m", "1Gi")}},
			usage{2000, 1 << 30, 1}},
		{"a sidecar adds to the containers and to later init containers", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar(container("100m", "")), container("1", "")},
			Containers:     []corev1.Container{container("200m", "")}},
			usage{1100, 0, 1}},
		{"overhead", corev1.PodSpec{Containers: []corev1.Container{container("100m", "")},
			Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}},
			usage{150, 0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := requested(&corev1.Pod{Spec: c.spec}); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestRoom: binds what fits, says why the rest does not in the scheduler's
// words, counts Pods bound before it started, and when a Pod leaves tries
// the waiting ones again (and only then).
func TestRoom(t *testing.T) {
	const node = "n"
	pod := func(name, cpu, memory, nodeName string, phase corev1.PodPhase) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{container(cpu, memory)}}}
		p.Namespace, p.Name, p.Status.Phase = "ns", name, phase
		return p
	}
	// Before the room's first use: one Pod runs on the node, one has
	// finished there, one runs elsewhere.
	cache := fake.NewClientBuilder().WithObjects(
		pod("running", "1", "1Gi", node, corev1.PodRunning),
		pod("done", "4", "4Gi", node, corev1.PodSucceeded),
		pod("elsewhere", "4", "4Gi", "other", corev1.PodRunning),
	).Build()
	r := newRoom(corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi"), corev1.ResourcePods: resource.MustParse("3"),
	})
	ctx := context.Background()
	reserve := func(p *corev1.Pod, want string) {
		t.Helper()
		got, err := r.reserve(ctx, cache, p, node)
		if err != nil || got != want {
			t.Fatalf("reserve %s: got %q, %v; want %q", p.Name, got, err, want)
		}
	}
	const tail = ". preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
	reserve(pod("a", "600m", "512Mi", "", ""), "")
	reserve(pod("a", "600m", "512Mi", "", ""), "") // a retried bind holds its own room
	reserve(pod("big", "500m", "1Gi", "", ""), "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory"+tail)
	reserve(pod("free", "", "", "", ""), "") // no requests: only the Pod count
	reserve(pod("more", "", "", "", ""), "0/1 nodes are available: 1 Too many pods"+tail)
	if len(r.retry) != 0 {
		t.Fatalf("retries before any Pod left: %d", len(r.retry))
	}

	// The cache shows a bound and running: nothing moves.
	r.observe(types.NamespacedName{Namespace: "ns", Name: "a"}, pod("a", "600m", "512Mi", node, corev1.PodRunning), node)
	if len(r.retry) != 0 {
		t.Fatalf("retries after a bound Pod's update: %d", len(r.retry))
	}
	// The Pod that ran before the room started finishes: the two waiting
	// Pods are tried again, and "big" fits now.
	r.observe(types.NamespacedName{Namespace: "ns", Name: "running"}, pod("running", "1", "1Gi", node, corev1.PodSucceeded), node)
	woken := map[string]bool{}
	for len(r.retry) > 0 {
		woken[(<-r.retry).Object.GetName()] = true
	}
	if !woken["big"] || !woken["more"] || len(woken) != 2 {
		t.Fatalf("woken: %v, want big and more", woken)
	}
	reserve(pod("big", "500m", "1Gi", "", ""), "")
	reserve(pod("more", "", "", "", ""), "0/1 nodes are available: 1 Too many pods"+tail)
	// A bind that did not happen gives its room back.
	r.unreserve(pod("free", "", "", "", ""))
	reserve(pod("more", "", "", "", ""), "")
	// A deleted Pod leaves no waiting entry behind.
	reserve(pod("gone", "", "", "", ""), "0/1 nodes are available: 1 Too many pods"+tail)
	r.observe(types.NamespacedName{Namespace: "ns", Name: "gone"}, nil, node)
	if r.waiting[types.NamespacedName{Namespace: "ns", Name: "gone"}] {
		t.Error("a deleted Pod still waits for room")
	}
	if want := (usage{1100, 512<<20 + 1<<30, 3}); r.used != want {
		t.Errorf("used %+v, want %+v", r.used, want)
	}
}
