package cluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// InstanceLabel ties a Pod to its Application: Helm sets it to the release
// name, Argo CD tracks applications by it.
const InstanceLabel = "app.kubernetes.io/instance"

// ApplicationMetrics is the resource use of the named applications (none:
// all), by name; an unreachable metrics API makes Available false, an
// application that does not exist domain.ErrNotFound.
func (k *Kube) ApplicationMetrics(ctx context.Context, names ...string) ([]domain.ApplicationMetrics, error) {
	if len(names) == 0 {
		apps, err := k.resources(ctx, domain.KindApplication)
		if err != nil {
			return nil, err
		}
		for _, a := range apps {
			names = append(names, a.name)
		}
	} else {
		for _, n := range names {
			if _, err := k.resource(ctx, domain.KindApplication, n); err != nil {
				return nil, err
			}
		}
	}
	selector := InstanceLabel // every pod that belongs to some application
	// A name too long for a label value matches no pods: the wide selector.
	if len(names) == 1 && len(validation.IsValidLabelValue(names[0])) == 0 {
		selector = InstanceLabel + "=" + names[0]
	}
	pods, err := k.core.CoreV1().Pods(k.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, translate("list pods", err)
	}
	var usage map[string]corev1.ResourceList
	if pm, err := k.metrics.PodMetricses(k.namespace).List(ctx, metav1.ListOptions{LabelSelector: selector}); err == nil {
		usage = podUsage(pm.Items)
	}
	return applicationMetrics(k.namespace, names, pods.Items, usage), nil
}

// podUsage sums each pod's container usage, by pod name.
func podUsage(items []metricsv1beta1.PodMetrics) map[string]corev1.ResourceList {
	out := make(map[string]corev1.ResourceList, len(items))
	for _, pm := range items {
		cpu, mem := resource.Quantity{}, resource.Quantity{}
		for _, c := range pm.Containers {
			cpu.Add(c.Usage[corev1.ResourceCPU])
			mem.Add(c.Usage[corev1.ResourceMemory])
		}
		out[pm.Name] = corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem}
	}
	return out
}

// applicationMetrics sums, per application, its running pods' requests,
// limits and usage; a partial sum, which would read low, is nil.
func applicationMetrics(namespace string, names []string, pods []corev1.Pod, usage map[string]corev1.ResourceList) []domain.ApplicationMetrics {
	byApp := map[string][]corev1.Pod{}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue // its containers no longer run
		}
		app := p.Labels[InstanceLabel]
		byApp[app] = append(byApp[app], p)
	}
	out := make([]domain.ApplicationMetrics, 0, len(names))
	for _, name := range names {
		m := domain.ApplicationMetrics{Name: name, Namespace: namespace, Available: usage != nil}
		var containers []corev1.Container
		for _, p := range byApp[name] {
			containers = append(containers, p.Spec.Containers...)
		}
		m.CPURequest = sumContainers(containers, corev1.ResourceCPU, true, milli)
		m.CPULimit = sumContainers(containers, corev1.ResourceCPU, false, milli)
		m.MemoryRequest = sumContainers(containers, corev1.ResourceMemory, true, whole)
		m.MemoryLimit = sumContainers(containers, corev1.ResourceMemory, false, whole)
		if usage != nil && len(byApp[name]) > 0 {
			cpu, mem, complete := resource.Quantity{}, resource.Quantity{}, true
			for _, p := range byApp[name] {
				u, ok := usage[p.Name]
				if !ok {
					complete = false
					break
				}
				cpu.Add(u[corev1.ResourceCPU])
				mem.Add(u[corev1.ResourceMemory])
			}
			if complete {
				m.CPUUsage, m.MemoryUsage = milli(cpu), whole(mem)
			}
		}
		out = append(out, m)
	}
	return out
}

func milli(q resource.Quantity) *int64 { v := q.MilliValue(); return &v }
func whole(q resource.Quantity) *int64 { v := q.Value(); return &v }

// sumContainers sums one resource's request (or limit); nil unless every container sets it.
func sumContainers(containers []corev1.Container, name corev1.ResourceName, request bool, unit func(resource.Quantity) *int64) *int64 {
	if len(containers) == 0 {
		return nil
	}
	sum := resource.Quantity{}
	for _, c := range containers {
		list := c.Resources.Limits
		if request {
			list = c.Resources.Requests
		}
		q, ok := list[name]
		if !ok {
			return nil
		}
		sum.Add(q)
	}
	return unit(sum)
}
