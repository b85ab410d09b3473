package nodesim_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// BenchmarkPodsStarted is how fast the simulator schedules and starts Pods
// and provisions their volumes, alone (no kube-controller-manager between
// the Pods and it, except the volume binder): units shaped like a
// validator's workloads, four Pods without volumes and one with a claim,
// are created at once by a client that is not itself a bound, and timed until
// every Pod runs ready. NODESIM_BENCH_UNITS sets the units (default 100).
//
//	go test ./impl/embedded/nodesim/ -run '^$' -bench Started -benchtime 1x
func BenchmarkPodsStarted(b *testing.B) {
	benchmarkStarted(b, createUnit)
}

// BenchmarkWorkloadsStarted is the same through kube-controller-manager:
// each unit four Deployments and a StatefulSet with a claim template, one
// replica each, as a validator's workloads are; the controllers make the
// Pods and claims, and the figure is bounded by them or the simulator.
func BenchmarkWorkloadsStarted(b *testing.B) {
	benchmarkStarted(b, createWorkloads)
}

func benchmarkStarted(b *testing.B, create func(context.Context, kubernetes.Interface, string, int) error) {
	if skipReason != "" {
		b.Skip(skipReason)
	}
	units := 100
	if v, err := strconv.Atoi(os.Getenv("NODESIM_BENCH_UNITS")); err == nil && v > 0 {
		units = v
	}
	rc := restConfig()
	rc.QPS, rc.Burst = 2000, 4000
	c := kubernetes.NewForConfigOrDie(rc)
	for i := 0; b.Loop(); i++ {
		ns := newNamespace(b, fmt.Sprintf("bench-%d-%d", time.Now().UnixNano()%1e6, i))
		ctx := context.Background()
		cpu0 := cpuTimes()
		start := time.Now()
		var wg sync.WaitGroup
		work := make(chan int)
		for range 16 {
			wg.Go(func() {
				for u := range work {
					if err := create(ctx, c, ns, u); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for u := range units {
			work <- u
		}
		close(work)
		wg.Wait()
		created := time.Since(start)
		want := 5 * units
		var ready int
		for deadline := time.Now().Add(10 * time.Minute); ; time.Sleep(250 * time.Millisecond) {
			pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				b.Fatal(err)
			}
			ready = 0
			for i := range pods.Items {
				if runningReady(&pods.Items[i]) {
					ready++
				}
			}
			if ready == want {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d pods running after 10 minutes", ready, want)
			}
		}
		took := time.Since(start)
		cpu := cpuTimes()
		// CPU per 100 Pods of each process: robust to a loaded machine,
		// where the rate only says who got the cores. "test" is this
		// process: the simulator, the creating client and the polling.
		for name, t := range cpu {
			b.ReportMetric((t-cpu0[name])*100/float64(want), "cpu-s/100pods:"+name)
		}
		b.ReportMetric(float64(want)/took.Seconds(), "pods/s")
		b.ReportMetric(created.Seconds(), "s-to-create")
		b.ReportMetric(took.Seconds(), "s-to-run")
		_ = c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	}
}

func runningReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// unitSpec is podSpec without requests: the benchmarks measure how fast
// Pods start, not the node's room (64 CPUs would hold 128 units of 500m).
func unitSpec() corev1.PodSpec {
	spec := podSpec()
	spec.Containers[0].Resources = corev1.ResourceRequirements{}
	return spec
}

// createUnit creates one validator's worth of Pods: four without volumes,
// and a database Pod with its claim.
func createUnit(ctx context.Context, c kubernetes.Interface, ns string, u int) error {
	for k := range 4 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("u%d-app%d", u, k), Namespace: ns}, Spec: unitSpec()}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("u%d-data", u), Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		return err
	}
	spec := unitSpec()
	spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("u%d-db", u), Namespace: ns}, Spec: spec}
	_, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	return err
}

// createWorkloads creates one validator's worth of workloads: four
// Deployments and a StatefulSet with a claim template.
func createWorkloads(ctx context.Context, c kubernetes.Interface, ns string, u int) error {
	for k := range 4 {
		name := fmt.Sprintf("u%d-app%d", u, k)
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels(name)},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels(name)}, Spec: unitSpec()},
			},
		}
		if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	name := fmt.Sprintf("u%d-db", u)
	spec := unitSpec()
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	st := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels(name)},
			Template:    corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels(name)}, Spec: spec},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
	_, err := c.AppsV1().StatefulSets(ns).Create(ctx, st, metav1.CreateOptions{})
	return err
}

// cpuTimes are the CPU seconds (user and system) this process and each of
// its children (the engine's) used so far, by command name.
func cpuTimes() map[string]float64 {
	out := map[string]float64{}
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
		if open < 0 || end < open {
			continue
		}
		name, rest := string(b[open+1:end]), strings.Fields(string(b[end+1:]))
		if len(rest) < 13 {
			continue
		}
		// Fields after the name: state, ppid, ..., utime (12th), stime (13th).
		ppid, _ := strconv.Atoi(rest[1])
		if pid != self && ppid != self {
			continue
		}
		if pid == self {
			name = "test"
		}
		ut, _ := strconv.ParseFloat(rest[11], 64)
		st, _ := strconv.ParseFloat(rest[12], 64)
		out[name] += (ut + st) / 100 // USER_HZ
	}
	return out
}
