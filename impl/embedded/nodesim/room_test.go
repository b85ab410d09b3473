package nodesim_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/validator-manager/validator-manager/impl/embedded/nodesim"
)

// TestNodeRoom: a node of 1 CPU, 1Gi and 3 Pods binds what fits and leaves
// the rest Pending with the scheduler's reason, condition and event, as a
// scheduler would; when a Pod leaves, a waiting one that fits now starts;
// a restarted simulator counts the Pods bound before it. (A simulator of
// its own, for a scheduler name of its own, so that the shared simulator
// does not bind these Pods.)
func TestNodeRoom(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	const scheduler = "room-scheduler"
	// start runs the node's simulator until the returned stop.
	start := func() (stop func()) {
		return startSim(t, restConfig(), nodesim.Options{
			NodeName: "room-node", SchedulerName: scheduler, Namespace: ns, ReadyDelay: readyDelay,
			Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("3")},
			Logger:   slog.New(slog.DiscardHandler),
		})
	}
	stop := start()
	t.Cleanup(func() {
		stop()
		_ = core.CoreV1().Nodes().Delete(context.Background(), "room-node", metav1.DeleteOptions{})
	})

	create := func(name, cpu, memory string) {
		t.Helper()
		req := corev1.ResourceList{}
		if cpu != "" {
			req[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if memory != "" {
			req[corev1.ResourceMemory] = resource.MustParse(memory)
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			SchedulerName: scheduler,
			Containers:    []corev1.Container{{Name: "app", Image: "busybox:1.36", Resources: corev1.ResourceRequirements{Requests: req}}},
		}}
		if _, err := core.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// state is a Pod's phase, node and PodScheduled condition.
	state := func(name string) string {
		p, err := core.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		s := fmt.Sprintf("%s on %q", p.Status.Phase, p.Spec.NodeName)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				s += fmt.Sprintf(", scheduled %s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return s
	}
	wait := func(name, want string) {
		t.Helper()
		eventually(t, 30*time.Second, name, func() (bool, string) {
			s := state(name)
			return s == want, s
		})
	}
	const tail = ". preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
	running := `Running on "room-node", scheduled True : `

	create("a", "600m", "256Mi")
	wait("a", running)
	create("b", "500m", "")
	wait("b", `Pending on "", scheduled False Unschedulable: 0/1 nodes are available: 1 Insufficient cpu`+tail)
	create("c", "", "2Gi")
	wait("c", `Pending on "", scheduled False Unschedulable: 0/1 nodes are available: 1 Insufficient memory`+tail)
	create("d", "", "")
	wait("d", running)
	create("e", "", "")
	wait("e", running)
	create("f", "", "")
	wait("f", `Pending on "", scheduled False Unschedulable: 0/1 nodes are available: 1 Too many pods`+tail)
	eventually(t, 10*time.Second, "a FailedScheduling event from the scheduler for each Pod left Pending", func() (bool, string) {
		evs, err := core.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", "FailedScheduling").String()})
		if err != nil {
			return false, err.Error()
		}
		got := map[string]string{}
		for _, e := range evs.Items {
			got[e.InvolvedObject.Name] = fmt.Sprintf("%s from %s: %s", e.Type, e.Source.Component, e.Message)
		}
		return len(got) == 3 && got["f"] == "Warning from "+scheduler+": 0/1 nodes are available: 1 Too many pods"+tail, fmt.Sprint(got)
	})

	// d leaves: f takes its place; b still lacks CPU.
	if err := core.CoreV1().Pods(ns).Delete(ctx, "d", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("f", running)
	// a leaves: b fits now, in the CPU a held.
	if err := core.CoreV1().Pods(ns).Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("b", running)
	eventually(t, 10*time.Second, "c still Pending", func() (bool, string) {
		s := state("c")
		return strings.HasPrefix(s, `Pending on "", scheduled False Unschedulable: 0/1 nodes are available: 1 Insufficient memory`), s
	})

	// A restarted simulator counts the Pods bound before it (b, e, f): a
	// new Pod finds the node full, and starts when one of them leaves.
	stop()
	stop = start()
	create("g", "", "")
	wait("g", `Pending on "", scheduled False Unschedulable: 0/1 nodes are available: 1 Too many pods`+tail)
	if err := core.CoreV1().Pods(ns).Delete(ctx, "e", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait("g", running)
}
