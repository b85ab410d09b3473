// Package podrefs lists the Secrets and ConfigMaps a Pod makes the kubelet
// read before it can start, for the node simulator and the workload
// controller. Not imagePullSecrets: a missing one only makes the kubelet warn.
package podrefs

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Kind of a referenced object.
type Kind string

// Kinds, spelt as the kubelet spells them in "couldn't find key".
const (
	Secret    Kind = "Secret"
	ConfigMap Kind = "ConfigMap"
)

// Ref is one object a container's environment or a volume reads.
type Ref struct {
	Kind Kind
	Name string
	// Keys it needs: an env valueFrom's key, a volume's items; none for
	// envFrom or a volume without items.
	Keys []string
	// Optional: the kubelet goes on without the object (or a key).
	Optional bool
}

// Env is what c's environment reads, in the kubelet's order: envFrom, then env.
func Env(c *corev1.Container) []Ref {
	var out []Ref
	for _, f := range c.EnvFrom {
		switch {
		case f.ConfigMapRef != nil:
			out = append(out, Ref{Kind: ConfigMap, Name: f.ConfigMapRef.Name, Optional: ptr.Deref(f.ConfigMapRef.Optional, false)})
		case f.SecretRef != nil:
			out = append(out, Ref{Kind: Secret, Name: f.SecretRef.Name, Optional: ptr.Deref(f.SecretRef.Optional, false)})
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
		case e.ValueFrom.ConfigMapKeyRef != nil:
			r := e.ValueFrom.ConfigMapKeyRef
			out = append(out, Ref{Kind: ConfigMap, Name: r.Name, Keys: []string{r.Key}, Optional: ptr.Deref(r.Optional, false)})
		case e.ValueFrom.SecretKeyRef != nil:
			r := e.ValueFrom.SecretKeyRef
			out = append(out, Ref{Kind: Secret, Name: r.Name, Keys: []string{r.Key}, Optional: ptr.Deref(r.Optional, false)})
		}
	}
	return out
}

// Volume is what v reads (a projected volume: each of its sources).
func Volume(v *corev1.Volume) []Ref {
	var out []Ref
	switch {
	case v.Secret != nil:
		out = append(out, Ref{Kind: Secret, Name: v.Secret.SecretName, Keys: keys(v.Secret.Items), Optional: ptr.Deref(v.Secret.Optional, false)})
	case v.ConfigMap != nil:
		out = append(out, Ref{Kind: ConfigMap, Name: v.ConfigMap.Name, Keys: keys(v.ConfigMap.Items), Optional: ptr.Deref(v.ConfigMap.Optional, false)})
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			switch {
			case s.Secret != nil:
				out = append(out, Ref{Kind: Secret, Name: s.Secret.Name, Keys: keys(s.Secret.Items), Optional: ptr.Deref(s.Secret.Optional, false)})
			case s.ConfigMap != nil:
				out = append(out, Ref{Kind: ConfigMap, Name: s.ConfigMap.Name, Keys: keys(s.ConfigMap.Items), Optional: ptr.Deref(s.ConfigMap.Optional, false)})
			}
		}
	}
	return out
}

func keys(items []corev1.KeyToPath) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

// All is everything spec reads: its init containers', containers' and
// volumes' references.
func All(spec *corev1.PodSpec) []Ref {
	var out []Ref
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		out = append(out, Env(&c)...)
	}
	for i := range spec.Volumes {
		out = append(out, Volume(&spec.Volumes[i])...)
	}
	return out
}

// Names are the distinct names of the objects of kind that spec reads,
// optionally or not.
func Names(spec *corev1.PodSpec, kind Kind) []string {
	var out []string
	for _, r := range All(spec) {
		if r.Kind == kind && !slices.Contains(out, r.Name) {
			out = append(out, r.Name)
		}
	}
	return out
}

// Object is one object a Pod reads.
type Object struct {
	Kind Kind
	Name string
}

// Lacking is what refs read, not optionally, that is not there: per object,
// a Ref without Keys when it does not exist, else with the keys it lacks
// from held (so a ref whose object's keys are unknown must come without them).
func Lacking(refs []Ref, held map[Object][]string) []Ref {
	var out []Ref
	for _, r := range refs {
		if r.Optional {
			continue
		}
		i := slices.IndexFunc(out, func(l Ref) bool { return l.Kind == r.Kind && l.Name == r.Name })
		keys, exists := held[Object{r.Kind, r.Name}]
		if !exists {
			if i < 0 {
				out = append(out, Ref{Kind: r.Kind, Name: r.Name})
			}
			continue
		}
		for _, k := range r.Keys {
			if slices.Contains(keys, k) {
				continue
			}
			if i < 0 {
				out, i = append(out, Ref{Kind: r.Kind, Name: r.Name}), len(out)
			}
			if !slices.Contains(out[i].Keys, k) {
				out[i].Keys = append(out[i].Keys, k)
			}
		}
	}
	return out
}
