package nodesim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/podrefs"
)

// The kubelet's rules that need no image, with its reasons and messages, so
// that the embedded default never reports running what a cluster could not
// run (docs/decisions.md, "It refuses what a kubelet would"). As the kubelet,
// they are checked when a container starts, not while it runs.

// Waiting reasons of the kubelet.
const (
	ReasonCreateContainerConfigError = "CreateContainerConfigError"
	ReasonInvalidImageName           = "InvalidImageName"
	ReasonCrashLoopBackOff           = "CrashLoopBackOff"
	reasonContainerCreating          = "ContainerCreating"
	reasonPodInitializing            = "PodInitializing"
)

// Indexes of the Pod cache by the Secrets and ConfigMaps a Pod reads, so that
// their changes reach the Pods waiting for them.
const (
	secretIndex    = "secret"
	configMapIndex = "configmap"
)

// refError is the kubelet's error for r, "" when what r needs exists in the
// simulator's cache (or r is optional). missingKey words a missing key (env
// and volumes differ).
func (s *Simulator) refError(ctx context.Context, namespace string, r podrefs.Ref, missingKey func(key string) string) string {
	if r.Optional {
		return ""
	}
	key := client.ObjectKey{Namespace: namespace, Name: r.Name}
	var keys []string
	var err error
	if r.Kind == podrefs.Secret {
		o := &corev1.Secret{}
		err = s.client.Get(ctx, key, o)
		keys = slices.Collect(maps.Keys(o.Data))
	} else {
		o := &corev1.ConfigMap{}
		err = s.client.Get(ctx, key, o)
		keys = slices.Concat(slices.Collect(maps.Keys(o.Data)), slices.Collect(maps.Keys(o.BinaryData)))
	}
	if err != nil {
		return apierrors.NewNotFound(schema.GroupResource{Resource: strings.ToLower(string(r.Kind))}, r.Name).Error()
	}
	for _, k := range r.Keys {
		if !slices.Contains(keys, k) {
			return missingKey(k)
		}
	}
	return ""
}

// imageError is the kubelet's InvalidImageName message, "" for an image
// reference that parses.
func imageError(image string) string {
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image reference %q: %v", image, image, err)
	}
	return ""
}

// startError is why the kubelet cannot start c: its waiting reason and
// message, or "" when it can.
func (s *Simulator) startError(ctx context.Context, p *corev1.Pod, c *corev1.Container) (reason, message string) {
	if msg := imageError(c.Image); msg != "" {
		return ReasonInvalidImageName, msg
	}
	if msg := s.configError(ctx, p.Namespace, c); msg != "" {
		return ReasonCreateContainerConfigError, msg
	}
	return "", ""
}

// configError checks c's environment in the kubelet's order: envFrom, then env.
func (s *Simulator) configError(ctx context.Context, ns string, c *corev1.Container) string {
	for _, r := range podrefs.Env(c) {
		if msg := s.refError(ctx, ns, r, func(k string) string {
			return fmt.Sprintf("couldn't find key %s in %s %s/%s", k, r.Kind, ns, r.Name)
		}); msg != "" {
			return msg
		}
	}
	return ""
}

// mountError is the kubelet's FailedMount message for the first volume of p
// it cannot set up, "" when it can set up all.
func (s *Simulator) mountError(ctx context.Context, p *corev1.Pod) string {
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		for _, r := range podrefs.Volume(v) {
			if msg := s.refError(ctx, p.Namespace, r, func(k string) string {
				if r.Kind == podrefs.Secret {
					return "references non-existent secret key: " + k
				}
				return "configmap references non-existent config key: " + k
			}); msg != "" {
				return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %s", v.Name, msg)
			}
		}
	}
	return ""
}

// claimError is the scheduler's message for a Pod whose claim does not
// exist or is being deleted, "" otherwise; and whether every claim is bound,
// which the scheduler's volume binding requires.
func (s *Simulator) claimError(ctx context.Context, p *corev1.Pod) (msg string, bound bool) {
	bound = true
	for _, name := range podClaims(p) {
		c := &corev1.PersistentVolumeClaim{}
		err := s.client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, c)
		var why string
		switch {
		case apierrors.IsNotFound(err):
			why = apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaim"}, name).Error()
		case err == nil && c.DeletionTimestamp != nil:
			why = fmt.Sprintf("persistentvolumeclaim %q is being deleted", name)
		default:
			bound = bound && err == nil && c.Status.Phase == corev1.ClaimBound
			continue
		}
		return fmt.Sprintf("0/1 nodes are available: %s. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.", why), false
	}
	return "", bound
}

// podSecrets and podConfigMaps index a Pod by the objects it reads.
func podSecrets(p *corev1.Pod) []string    { return podrefs.Names(&p.Spec, podrefs.Secret) }
func podConfigMaps(p *corev1.Pod) []string { return podrefs.Names(&p.Spec, podrefs.ConfigMap) }

// keysOnly keeps the keys of a cached Secret or ConfigMap: the rules need no
// more, and the simulator holds no secret.
func keysOnly(o any) (any, error) {
	switch v := o.(type) {
	case *corev1.Secret:
		for k := range v.Data {
			v.Data[k] = nil
		}
		// An annotation may quote the values (kubectl's last-applied-configuration).
		v.StringData, v.ManagedFields, v.Annotations = nil, nil, nil
	case *corev1.ConfigMap:
		for k := range v.Data {
			v.Data[k] = ""
		}
		for k := range v.BinaryData {
			v.BinaryData[k] = nil
		}
		v.ManagedFields = nil
	}
	return o, nil
}
