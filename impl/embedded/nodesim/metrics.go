package nodesim

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"math"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Metrics answers as metrics.k8s.io would for the Pods the simulator runs,
// since a metrics-server has nothing to scrape without a kubelet
// (docs/decisions.md, "Metrics without a metrics API").
type Metrics struct {
	pods client.Reader // the simulator's cache
}

var _ metricsclient.PodMetricsesGetter = (*Metrics)(nil)

// PodMetricses is the metrics of the Pods of namespace ("" for all).
func (m *Metrics) PodMetricses(namespace string) metricsclient.PodMetricsInterface {
	return podMetricses{m: m, namespace: namespace}
}

type podMetricses struct {
	m         *Metrics
	namespace string
}

var podMetricsResource = metricsv1beta1.SchemeGroupVersion.WithResource("pods").GroupResource()

func (p podMetricses) List(ctx context.Context, opts metav1.ListOptions) (*metricsv1beta1.PodMetricsList, error) {
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	var pods corev1.PodList
	if err := p.m.pods.List(ctx, &pods, client.InNamespace(p.namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	t := time.Now()
	out := &metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{APIVersion: metricsv1beta1.SchemeGroupVersion.String(), Kind: "PodMetricsList"}}
	for i := range pods.Items {
		if pods.Items[i].Status.Phase == corev1.PodRunning {
			out.Items = append(out.Items, podMetrics(&pods.Items[i], t))
		}
	}
	return out, nil
}

func (p podMetricses) Get(ctx context.Context, name string, _ metav1.GetOptions) (*metricsv1beta1.PodMetrics, error) {
	var pod corev1.Pod
	if err := p.m.pods.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: name}, &pod); err != nil {
		return nil, err
	}
	if pod.Status.Phase != corev1.PodRunning {
		return nil, apierrors.NewNotFound(podMetricsResource, name)
	}
	pm := podMetrics(&pod, time.Now())
	return &pm, nil
}

// Watch is not served, as metrics-server does not serve it either.
func (p podMetricses) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, apierrors.NewMethodNotSupported(podMetricsResource, "watch")
}

func podMetrics(p *corev1.Pod, t time.Time) metricsv1beta1.PodMetrics {
	h := fnv.New32a()
	h.Write([]byte(p.Namespace + "/" + p.Name))
	phase := float64(h.Sum32()%1000) / 1000 * 2 * math.Pi
	wave := math.Sin(float64(t.Unix())/300*2*math.Pi + phase) // a five-minute cycle
	pm := metricsv1beta1.PodMetrics{
		TypeMeta:   metav1.TypeMeta{APIVersion: metricsv1beta1.SchemeGroupVersion.String(), Kind: "PodMetrics"},
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels},
		Timestamp:  metav1.NewTime(t.UTC().Truncate(time.Second)),
		Window:     metav1.Duration{Duration: 30 * time.Second},
	}
	for _, c := range p.Spec.Containers {
		cpu := cmp.Or(c.Resources.Requests.Cpu().MilliValue(), 50)
		mem := cmp.Or(c.Resources.Requests.Memory().Value(), 64<<20)
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

// MetricsPath is where, under Options.MetricsAddress, the pod metrics are
// served, as metrics.k8s.io's API group is under an API server's address.
const MetricsPath = "/apis/metrics.k8s.io/"

// Handler serves List and Get as metrics.k8s.io does, so that a server in
// another process reads them with the real clientset.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	base := "GET " + MetricsPath + metricsv1beta1.SchemeGroupVersion.Version
	list := func(w http.ResponseWriter, r *http.Request) {
		l, err := m.PodMetricses(r.PathValue("namespace")).List(r.Context(), metav1.ListOptions{LabelSelector: r.URL.Query().Get("labelSelector")})
		reply(w, l, err)
	}
	mux.HandleFunc(base+"/pods", list)
	mux.HandleFunc(base+"/namespaces/{namespace}/pods", list)
	mux.HandleFunc(base+"/namespaces/{namespace}/pods/{name}", func(w http.ResponseWriter, r *http.Request) {
		pm, err := m.PodMetricses(r.PathValue("namespace")).Get(r.Context(), r.PathValue("name"), metav1.GetOptions{})
		reply(w, pm, err)
	})
	return mux
}

// reply writes v, or err as the API server's Status.
func reply(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		st := apierrors.APIStatus(nil)
		if !errors.As(err, &st) {
			st = apierrors.NewInternalError(err)
		}
		status := st.Status()
		status.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
		w.WriteHeader(int(status.Code))
		_ = json.NewEncoder(w).Encode(status)
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}
