package main

// Where the time from created to RUNNING goes: for each validator, when each
// part of the chain first showed it (the cluster's own timestamps, to the
// second; the row's from polling the 1.11 list), so that a convergence that
// misses its goal names the stage that holds it.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/cluster"
)

// stage is one step of the chain, in order.
type stage int

const (
	stageCreated   stage = iota // the create answered (the row is recorded)
	stageResource               // the Validator resource exists (intent controller)
	stageWorkloads              // its Deployments and StatefulSet exist (workload controller)
	stagePods                   // a Pod of each exists (kube-controller-manager)
	stageReady                  // every Pod is ready (node simulator)
	stageStatus                 // the resource's status is past PENDING (workload controller)
	stageRow                    // the 1.11 row is past PENDING (intent controller)
	stages
)

var stageNames = [stages]string{
	"create answered (row recorded)",
	"Validator resource created (intent controller)",
	"Deployments and StatefulSet created (workload controller)",
	"a Pod of each created (kube-controller-manager)",
	"every Pod ready (node simulator)",
	"resource status past PENDING (workload controller)",
	"1.11 row past PENDING (intent controller)",
}

// timeline is when each validator reached each stage (zero: not reached).
type timeline map[string]*[stages]time.Time

// clusterStages fills the cluster's stages of names from what the API server
// holds now: creation timestamps, and the Ready and readiness conditions'
// transition times.
func clusterStages(ctx context.Context, k *kubernetes.Clientset, t timeline) error {
	raw, err := k.RESTClient().Get().AbsPath("/apis", cluster.Group, cluster.Version, cluster.Resource).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("list validators: %w", err)
	}
	var vs v1alpha1.ValidatorList
	if err := json.Unmarshal(raw, &vs); err != nil {
		return fmt.Errorf("list validators: %w", err)
	}
	for i := range vs.Items {
		v := &vs.Items[i]
		reached, ok := t[v.Name]
		if !ok {
			continue
		}
		reached[stageResource] = v.CreationTimestamp.Time
		if v.Status.Phase != "" && v.Status.Phase != v1alpha1.PhasePending {
			// The last of the conditions a phase past PENDING needs.
			var last time.Time
			for _, c := range v.Status.Conditions {
				switch c.Type {
				case v1alpha1.ConditionParticipantReady, v1alpha1.ConditionValidatorAppReady, v1alpha1.ConditionDatabaseReady:
					if c.Status == metav1.ConditionTrue && c.LastTransitionTime.After(last) {
						last = c.LastTransitionTime.Time
					}
				}
			}
			reached[stageStatus] = last
		}
	}
	sel := metav1.ListOptions{LabelSelector: cluster.ValidatorLabel}
	// Per validator: its workloads (latest creation) and their number.
	workloads := map[string]int{}
	note := func(m metav1.ObjectMeta) {
		name := m.Labels[cluster.ValidatorLabel]
		if reached, ok := t[name]; ok {
			workloads[name]++
			reached[stageWorkloads] = later(reached[stageWorkloads], m.CreationTimestamp.Time)
		}
	}
	deps, err := k.AppsV1().Deployments("").List(ctx, sel)
	if err != nil {
		return err
	}
	for _, d := range deps.Items {
		note(d.ObjectMeta)
	}
	sts, err := k.AppsV1().StatefulSets("").List(ctx, sel)
	if err != nil {
		return err
	}
	for _, s := range sts.Items {
		note(s.ObjectMeta)
	}
	// More ReplicaSets than Deployments: rollouts during the creates (a
	// template that changed after its Deployment was first applied).
	rs, err := k.AppsV1().ReplicaSets("").List(ctx, sel)
	if err != nil {
		return err
	}
	fmt.Printf("cluster: %d Deployments, %d ReplicaSets, %d StatefulSets of %d validators\n", len(deps.Items), len(rs.Items), len(sts.Items), len(t))
	pods, err := k.CoreV1().Pods("").List(ctx, sel)
	if err != nil {
		return err
	}
	count, ready := map[string]int{}, map[string]int{}
	readyAt := map[string]time.Time{}
	for i := range pods.Items {
		p := &pods.Items[i]
		name := p.Labels[cluster.ValidatorLabel]
		reached, ok := t[name]
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		count[name]++
		reached[stagePods] = later(reached[stagePods], p.CreationTimestamp.Time)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready[name]++
				readyAt[name] = later(readyAt[name], c.LastTransitionTime.Time)
			}
		}
	}
	for name, reached := range t {
		// A stage counts once the whole validator has reached it.
		if workloads[name] == 0 {
			reached[stageWorkloads] = time.Time{}
		}
		if count[name] < workloads[name] || count[name] == 0 {
			reached[stagePods] = time.Time{}
		}
		if reached[stagePods].IsZero() || ready[name] < count[name] {
			continue
		}
		reached[stageReady] = readyAt[name]
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// printStages prints, per stage, how many validators reached it and when
// (from the last create: the moments half, nine tenths and all of them had
// reached it), and the time each validator took to reach it from the stage
// before (p50, p90, max). It returns the moments all had, stage by stage.
// Cluster timestamps have a resolution of one second.
func printStages(t timeline, last time.Time) string {
	fmt.Println()
	fmt.Println("| stage | reached | from the last create: 50 % / 90 % / all | from the stage before, per validator: p50 / p90 / max |")
	fmt.Println("|---|---|---|---|")
	var alls []string
	for s := range stages {
		var when, step []time.Duration
		for _, reached := range t {
			if reached[s].IsZero() {
				continue
			}
			when = append(when, reached[s].Sub(last))
			if s > 0 && !reached[s-1].IsZero() {
				step = append(step, reached[s].Sub(reached[s-1]))
			}
		}
		slices.Sort(when)
		slices.Sort(step)
		all := quantile(when, len(t), 1)
		if s > 0 {
			alls = append(alls, fmt.Sprintf("%s %s", strings.SplitN(stageNames[s], " (", 2)[0], all))
		}
		fmt.Printf("| %s | %d of %d | %s / %s / %s | %s / %s / %s |\n", stageNames[s], len(when), len(t),
			quantile(when, len(t), 0.5), quantile(when, len(t), 0.9), all,
			quantile(step, len(step), 0.5), quantile(step, len(step), 0.9), quantile(step, len(step), 1))
	}
	fmt.Println()
	return strings.Join(alls, "; ")
}

// quantile is the moment the q-th share of n had reached a stage, given the
// sorted moments of those that did; "—" when fewer did.
func quantile(sorted []time.Duration, n int, q float64) string {
	i := int(math.Ceil(float64(n)*q)) - 1
	if n == 0 || i >= len(sorted) {
		return "—"
	}
	return secs(sorted[max(i, 0)])
}

// pendingRows names the validators the 1.11 list shows PENDING, a page of
// 500 at a time.
func pendingRows(s *server) (map[string]bool, error) {
	out := map[string]bool{}
	for from := 0; ; from += 500 {
		status, body, err := call(s, http.MethodGet, fmt.Sprintf("/api/validators?limit=500&status=PENDING&from=%d", from), nil)
		if err != nil || status != http.StatusOK {
			return nil, fmt.Errorf("list PENDING: %d %s %v", status, body, err)
		}
		var page struct {
			Validators []struct {
				Name string `json:"name"`
			} `json:"validators"`
			TotalCount int `json:"totalCount"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, err
		}
		for _, v := range page.Validators {
			out[v.Name] = true
		}
		if len(page.Validators) < 500 || from+500 >= page.TotalCount {
			return out, nil
		}
	}
}
