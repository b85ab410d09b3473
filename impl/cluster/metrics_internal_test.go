package cluster

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestApplicationMetricsSums(t *testing.T) {
	q := resource.MustParse
	container := func(req, lim corev1.ResourceList) corev1.Container {
		return corev1.Container{Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	full := corev1.ResourceList{corev1.ResourceCPU: q("250m"), corev1.ResourceMemory: q("1Ki")}
	cpuOnly := corev1.ResourceList{corev1.ResourceCPU: q("1")}
	pod := func(name, app string, phase corev1.PodPhase, cs ...corev1.Container) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{InstanceLabel: app}},
			Spec:       corev1.PodSpec{Containers: cs},
			Status:     corev1.PodStatus{Phase: phase},
		}
	}
	usage := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: q(cpu), corev1.ResourceMemory: q(mem)}
	}
	s := func(v *int64) string {
		if v == nil {
			return "null"
		}
		return fmt.Sprint(*v)
	}
	tests := []struct {
		name  string
		pods  []corev1.Pod
		usage map[string]corev1.ResourceList
		want  string // cpu usage/request/limit, memory usage/request/limit, available
	}{
		{"two pods, all set",
			[]corev1.Pod{pod("a-0", "a", corev1.PodRunning, container(full, full)), pod("a-1", "a", corev1.PodRunning, container(full, cpuOnly))},
			map[string]corev1.ResourceList{"a-0": usage("10m", "1Mi"), "a-1": usage("5m", "1Mi")},
			"15/500/1250 2097152/2048/null true"},
		{"a container without a request makes the request unknown",
			[]corev1.Pod{pod("a-0", "a", corev1.PodRunning, container(full, nil), container(nil, nil))},
			map[string]corev1.ResourceList{"a-0": usage("10m", "1Mi")},
			"10/null/null 1048576/null/null true"},
		{"a pod without a sample makes usage unknown",
			[]corev1.Pod{pod("a-0", "a", corev1.PodRunning, container(full, full)), pod("a-1", "a", corev1.PodPending, container(full, full))},
			map[string]corev1.ResourceList{"a-0": usage("10m", "1Mi")},
			"null/500/500 null/2048/2048 true"},
		{"finished pods do not count",
			[]corev1.Pod{pod("a-0", "a", corev1.PodSucceeded, container(full, full)), pod("b-0", "b", corev1.PodRunning, container(full, full))},
			map[string]corev1.ResourceList{},
			"null/null/null null/null/null true"},
		{"metrics API unreachable",
			[]corev1.Pod{pod("a-0", "a", corev1.PodRunning, container(full, full))},
			nil,
			"null/250/250 null/1024/1024 false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := applicationMetrics("ns", []string{"a"}, tt.pods, tt.usage)
			if len(got) != 1 {
				t.Fatalf("got %d entries, want 1", len(got))
			}
			m := got[0]
			line := fmt.Sprintf("%s/%s/%s %s/%s/%s %v", s(m.CPUUsage), s(m.CPURequest), s(m.CPULimit), s(m.MemoryUsage), s(m.MemoryRequest), s(m.MemoryLimit), m.Available)
			if line != tt.want {
				t.Fatalf("got %s, want %s", line, tt.want)
			}
		})
	}
}
