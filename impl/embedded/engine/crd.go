package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/validator-manager/validator-manager/deploy/crds"
)

var crdResource = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

// FieldManager is the engine's name in managedFields.
const FieldManager = "validator-manager-engine"

// appliedAnnotation holds the SHA-256 of the manifest a stored CRD was last
// applied from: an apply that changes nothing is still a write request.
const appliedAnnotation = "validator-manager.io/applied"

// installCRDs applies server-side each CRD of deploy/crds not applied from
// the same manifest, and waits until all are established.
func installCRDs(ctx context.Context, cfg *rest.Config, timeout time.Duration) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := dyn.Resource(crdResource)
	var names []string
	for _, m := range crds.All() {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(m.YAML, &u.Object); err != nil {
			return fmt.Errorf("CRD %s: %w", m.Name, err)
		}
		sum := sha256.Sum256(m.YAML)
		digest := hex.EncodeToString(sum[:])
		names = append(names, u.GetName())
		if stored, err := api.Get(ctx, u.GetName(), metav1.GetOptions{}); err == nil && stored.GetAnnotations()[appliedAnnotation] == digest {
			continue
		}
		if err := unstructured.SetNestedField(u.Object, digest, "metadata", "annotations", appliedAnnotation); err != nil {
			return fmt.Errorf("CRD %s: %w", m.Name, err)
		}
		if _, err := api.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("install CRD %s: %w", m.Name, err)
		}
	}
	for _, n := range names {
		var last string
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			u, err := api.Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			last = "not established"
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s: %s: %w", n, last, err)
		}
	}
	return nil
}
