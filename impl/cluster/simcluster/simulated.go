package simcluster

import (
	"context"
	"errors"
	"fmt"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"hash/fnv"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clienttesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
)

// The embedded cluster simulates the workloads of each Application: the
// kubelet keeps spec.replicas (default 1) Pods <app>-<i> labelled
// app.kubernetes.io/instance=<app>, each with one container that requests
// 250m CPU and 256Mi and is limited to 1 CPU and 1Gi, and sets the
// Application's status to {phase: Running, replicas: n}. A fake
// metrics.k8s.io reports usage for those Pods.

// SimulatedLabel marks the Pods the simulated kubelet created.
const SimulatedLabel = "validator-manager.io/simulated"

var (
	simulatedRequests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	simulatedLimits   = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
)

func simulatedPod(namespace, app string, i int64, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%d", app, i),
			Namespace: namespace,
			Labels:    map[string]string{cluster.InstanceLabel: app, SimulatedLabel: "true"},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "app",
			Image:     image,
			Resources: corev1.ResourceRequirements{Requests: simulatedRequests.DeepCopy(), Limits: simulatedLimits.DeepCopy()},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// stepApplications brings each Application's simulated Pods and status to
// what its spec says, and removes the Pods of Applications that are gone.
func (k *Kubelet) stepApplications(ctx context.Context) error {
	apps, err := k.apps(ctx)
	if err != nil {
		return err
	}
	have, err := k.pods.List(ctx, metav1.ListOptions{LabelSelector: SimulatedLabel + "=true"})
	if err != nil {
		return err
	}
	existing := map[string]bool{}
	for _, p := range have.Items {
		existing[p.Name] = true
	}
	want := map[string]bool{}
	var errs []error
	for _, a := range apps {
		replicas, found, _ := unstructured.NestedInt64(a.Object, "spec", "replicas")
		if !found || replicas < 0 {
			replicas = 1
		}
		image, _, _ := unstructured.NestedString(a.Object, "spec", "image")
		if image == "" {
			image = "busybox:1.36"
		}
		for i := range replicas {
			p := simulatedPod(a.GetNamespace(), a.GetName(), i, image)
			want[p.Name] = true
			if existing[p.Name] {
				continue
			}
			if _, err := k.pods.Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("pod %q of application %q: %w", p.Name, a.GetName(), err))
			}
		}
		status := map[string]any{"phase": "Running", "replicas": replicas}
		if have, _, _ := unstructured.NestedMap(a.Object, "status"); have["phase"] == status["phase"] && have["replicas"] == status["replicas"] {
			continue
		}
		u := a.DeepCopy()
		u.Object["status"] = status
		_, err := k.applications.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("status of application %q: %w", a.GetName(), err))
		}
	}
	for name := range existing {
		if want[name] {
			continue
		}
		if err := k.pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("pod %q: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// simulatedMetrics is a metrics.k8s.io client whose PodMetrics are computed
// on each list from the running Pods: each container uses 20–70% of its CPU
// request and 50–70% of its memory request (50m and 64Mi without one),
// varying slowly with time and differently per Pod.
func simulatedMetrics(core kubernetes.Interface, now func() time.Time) *metricsfake.Clientset {
	if now == nil {
		now = time.Now
	}
	m := metricsfake.NewSimpleClientset()
	list := func(action clienttesting.Action) (bool, runtime.Object, error) {
		sel := labels.Everything()
		if la, ok := action.(clienttesting.ListAction); ok {
			sel = la.GetListRestrictions().Labels
		}
		pods, err := core.CoreV1().Pods(action.GetNamespace()).List(context.Background(), metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return true, nil, err
		}
		t := now()
		out := &metricsv1beta1.PodMetricsList{}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			out.Items = append(out.Items, podMetrics(p, t))
		}
		return true, out, nil
	}
	m.PrependReactor("list", "pods", list)
	m.PrependReactor("get", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		name := action.(clienttesting.GetAction).GetName()
		p, err := core.CoreV1().Pods(action.GetNamespace()).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return true, nil, err
		}
		pm := podMetrics(*p, now())
		return true, &pm, nil
	})
	return m
}

func podMetrics(p corev1.Pod, t time.Time) metricsv1beta1.PodMetrics {
	h := fnv.New32a()
	h.Write([]byte(p.Namespace + "/" + p.Name))
	phase := float64(h.Sum32()%1000) / 1000 * 2 * math.Pi
	wave := math.Sin(float64(t.Unix())/300*2*math.Pi + phase) // a five-minute cycle
	pm := metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels},
		Timestamp:  metav1.NewTime(t.UTC().Truncate(time.Second)),
		Window:     metav1.Duration{Duration: 30 * time.Second},
	}
	for _, c := range p.Spec.Containers {
		cpu := c.Resources.Requests.Cpu().MilliValue()
		if cpu == 0 {
			cpu = 50
		}
		mem := c.Resources.Requests.Memory().Value()
		if mem == 0 {
			mem = 64 << 20
		}
		pm.Containers = append(pm.Containers, metricsv1beta1.ContainerMetrics{
			Name: c.Name,
			Usage: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(float64(cpu)*(0.45+0.25*wave)), resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(int64(float64(mem)*(0.6+0.1*wave)), resource.BinarySI),
			},
		})
	}
	return pm
}
