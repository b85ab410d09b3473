package simcluster

import (
	"context"
	"errors"
	"fmt"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// KubeletOptions tune the simulated kubelet; zero values take the defaults.
type KubeletOptions struct {
	// A validator is PENDING until RunningAfter has passed since its
	// creation, then RUNNING until CompletedAfter, then COMPLETED; its
	// database is ready from RUNNING on. Defaults 2 s and 5 s.
	RunningAfter   time.Duration
	CompletedAfter time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Interval is how often Run steps; default 1 s.
	Interval time.Duration
}

// Defaults of KubeletOptions.
const (
	DefaultRunningAfter   = 2 * time.Second
	DefaultCompletedAfter = 5 * time.Second
	defaultKubeletTick    = time.Second
)

func (o *KubeletOptions) defaults() error {
	if o.RunningAfter == 0 {
		o.RunningAfter = DefaultRunningAfter
	}
	if o.CompletedAfter == 0 {
		o.CompletedAfter = DefaultCompletedAfter
	}
	if o.CompletedAfter < o.RunningAfter {
		return fmt.Errorf("cluster: CompletedAfter (%s) is before RunningAfter (%s)", o.CompletedAfter, o.RunningAfter)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Interval == 0 {
		o.Interval = defaultKubeletTick
	}
	return nil
}

// Kubelet stands in, on the embedded cluster, for the validator operator and
// the kubelets of a real one: it moves each Validator's status with its age,
// writing it through the status subresource as a controller does.
type Kubelet struct {
	validators dynamic.ResourceInterface
	// list reads the validators (the gateway's informer cache, made fresh).
	list func(ctx context.Context) ([]cluster.CachedValidator, error)
	// apps reads the Applications (the gateway's cache, made fresh); their
	// pods are simulated too, so that application metrics have something to
	// measure.
	apps         func(ctx context.Context) ([]*unstructured.Unstructured, error)
	applications dynamic.ResourceInterface
	pods         typedcorev1.PodInterface
	opts         KubeletOptions
	log          *slog.Logger
	// afterStep runs after each step of Run.
	afterStep func()
}

// statusAt is the status a validator created at created has at now.
func (o KubeletOptions) statusAt(created, now time.Time) map[string]any {
	age := now.Sub(created)
	switch {
	case age >= o.CompletedAfter:
		return map[string]any{"phase": string(domain.PhaseCompleted), "databaseReady": true}
	case age >= o.RunningAfter:
		return map[string]any{"phase": string(domain.PhaseRunning), "databaseReady": true}
	}
	return map[string]any{"phase": string(domain.PhasePending)}
}

// Step brings every validator's status to what its age says.
func (k *Kubelet) Step(ctx context.Context) error {
	objs, err := k.list(ctx)
	if err != nil {
		return err
	}
	now := k.opts.Now()
	var errs []error
	for _, o := range objs {
		want := k.opts.statusAt(o.Created, now)
		if o.Phase == want["phase"] && o.DatabaseReady == want["databaseReady"] {
			continue
		}
		// The status subresource reads the status and the resourceVersion
		// (a stale one conflicts), nothing else.
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": cluster.Group + "/" + cluster.Version,
			"kind":       cluster.Kind,
			"status":     want,
		}}
		u.SetName(o.Name)
		u.SetNamespace(o.Namespace)
		u.SetResourceVersion(o.ResourceVersion)
		_, err := k.validators.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // changed or gone meanwhile: the next step sees it
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("status of validator %q: %w", o.Name, err))
		}
	}
	if k.apps != nil {
		errs = append(errs, k.stepApplications(ctx))
	}
	return errors.Join(errs...)
}

// Run steps every Interval until ctx ends.
func (k *Kubelet) Run(ctx context.Context) error {
	tick := time.NewTicker(k.opts.Interval)
	defer tick.Stop()
	for {
		if err := k.Step(ctx); err != nil && ctx.Err() == nil {
			// Retried on the next tick, as a controller requeues.
			k.log.WarnContext(ctx, "embedded cluster: moving validator status", "error", err)
		}
		if k.afterStep != nil {
			k.afterStep()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
