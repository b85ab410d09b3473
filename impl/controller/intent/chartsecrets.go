package intent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

// In chart mode the leader writes the Secrets Splice's charts read
// (workload.ChartSecrets) into the release's namespace, copied from the
// validator's own. Values are never logged: errors name the Secret and the
// API server's reason only.

// ChartSourcesLabel is a digest of what a chart Secret was written from
// (never a value), so that the cache, which keeps labels, tells whether
// its sources changed; a value changed by hand is left as it is.
const ChartSourcesLabel = "validator-manager.io/chart-sources"

// chartSecretsOwner is the field owner of the chart Secrets and of its
// labels on the release's namespace (which the workload controller applies too).
const chartSecretsOwner = "validator-manager-chart-secrets"

// writeChartSecrets writes the chart Secrets the cache shows missing,
// lacking a key or written from other sources. A Secret whose source is
// missing waits for it: its arrival reconciles again.
func (c *Controller) writeChartSecrets(ctx context.Context, name string) error {
	if !c.charts {
		return nil
	}
	v := &v1alpha1.Validator{}
	if err := c.kube.Get(ctx, types.NamespacedName{Namespace: c.namespace, Name: name}, v); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !v.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(v, workload.ReleaseFinalizer) {
		// Without the workload controller's finalizer the namespace and
		// the copies of the secret values would outlive the Validator.
		return nil
	}
	ns := workload.ReleaseNamespace(v)
	var stale []workload.ChartSecret
	for _, s := range workload.ChartSecrets(v) {
		digest, _, ok, err := chartSecretData(ctx, c.kube, v.Namespace, s)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		cur := &corev1.Secret{}
		err = c.kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: s.Name}, cur)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err != nil || cur.Labels[ChartSourcesLabel] != digest || !hasKeys(cur, s) {
			stale = append(stale, s)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	labels := workload.ValidatorLabels(v)
	// Someone else's namespace is left alone (the workload controller
	// shows the conflict): labelling it would hand it to that controller,
	// and the Secrets would carry the values into it. The cache holds none.
	cur := &corev1.Namespace{}
	switch err := c.reader.Get(ctx, types.NamespacedName{Name: ns}, cur); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("read the release's namespace %s: %w", ns, err)
	case !k8slabels.SelectorFromSet(labels).Matches(k8slabels.Set(cur.Labels)):
		return nil
	}
	if err := c.kube.Apply(ctx, corev1ac.Namespace(ns).WithLabels(labels), client.FieldOwner(chartSecretsOwner)); err != nil {
		return fmt.Errorf("apply the release's namespace %s: %w", ns, err)
	}
	for _, s := range stale {
		digest, data, ok, err := chartSecretData(ctx, c.reader, v.Namespace, s)
		if err != nil || !ok {
			return err
		}
		ac := corev1ac.Secret(s.Name, ns).WithData(data).
			WithLabels(labels).WithLabels(map[string]string{ChartSourcesLabel: digest})
		if err := c.kube.Apply(ctx, ac, client.FieldOwner(chartSecretsOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("write Secret %s/%s: %w", ns, s.Name, withoutMessage(err))
		}
	}
	return nil
}

// chartSecretData is what s holds, read through r (the cache has the keys
// only, the API server the values), and the digest of its sources; ok is
// false when a source Secret or its key is missing.
func chartSecretData(ctx context.Context, r client.Reader, namespace string, s workload.ChartSecret) (digest string, data map[string][]byte, ok bool, err error) {
	h := sha256.New()
	data = map[string][]byte{}
	for _, k := range s.Keys {
		if k.From == nil {
			data[k.Key] = []byte(k.Value)
			fmt.Fprintf(h, "%q=%q\n", k.Key, k.Value)
			continue
		}
		src := &corev1.Secret{}
		switch err := r.Get(ctx, types.NamespacedName{Namespace: namespace, Name: k.From.Name}, src); {
		case apierrors.IsNotFound(err):
			return "", nil, false, nil
		case err != nil:
			return "", nil, false, fmt.Errorf("read Secret %s/%s: %w", namespace, k.From.Name, withoutMessage(err))
		}
		value, has := src.Data[k.From.Key]
		if !has {
			return "", nil, false, nil
		}
		data[k.Key] = value
		fmt.Fprintf(h, "%q<%q/%q uid %s version %s\n", k.Key, k.From.Name, k.From.Key, src.UID, src.ResourceVersion)
	}
	// A label value: at most 63 characters.
	return hex.EncodeToString(h.Sum(nil))[:40], data, true, nil
}

// hasKeys tells whether cur has every key of s.
func hasKeys(cur *corev1.Secret, s workload.ChartSecret) bool {
	for _, k := range s.Keys {
		if _, ok := cur.Data[k.Key]; !ok {
			return false
		}
	}
	return true
}

// withoutMessage is err without the API server's message, which may quote
// what was sent (a Secret's value): its reason and code remain.
func withoutMessage(err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err
	}
	s := status.Status()
	return fmt.Errorf("%s (%d)", s.Reason, s.Code)
}

// chartSecretRequests maps a chart Secret's change to its validator.
func (c *Controller) chartSecretRequests(_ context.Context, s client.Object) []reconcile.Request {
	name := s.GetLabels()[workload.ValidatorLabel]
	if name == "" || s.GetLabels()[workload.ManagedByLabel] != workload.ManagedBy || s.GetNamespace() == c.namespace {
		return nil
	}
	v := &v1alpha1.Validator{}
	v.Name, v.Namespace = name, c.namespace
	if s.GetNamespace() != workload.ReleaseNamespace(v) {
		return nil
	}
	return []reconcile.Request{c.request(name)}
}
