package workload_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/controller/workload"
)

// TestControllerReadsVersion1Config: a Validator whose spec.config is of
// stored version 1 (as in etcd from before the CRD took Kubernetes' types)
// still lays out whole: the API server keeps spec.config as written, the
// controller converts its environment and resources.
func TestControllerReadsVersion1Config(t *testing.T) {
	if apiServer == nil {
		t.Skip(skipNoServer)
	}
	raw, err := os.ReadFile("../../apis/v1alpha1/testdata/stored-config-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var config map[string]any
	if err := json.Unmarshal(raw, &config); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := fmt.Sprintf("wl-%d", namespaces.Add(1))
	if err := apiServer.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Validator",
		"metadata": map[string]any{"name": "legacy", "namespace": ns},
		"spec": map[string]any{"config": config, "customAuth": false, "externalDatabase": false,
			"migration": map[string]any{"id": int64(3), "migrating": false}},
	}}
	if err := apiServer.Create(ctx, u); err != nil {
		t.Fatalf("create a Validator of stored version 1: %v", err)
	}
	v := &v1alpha1.Validator{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: ns}}
	eventually(t, "participant laid out from the version 1 config", func(ctx context.Context) error {
		d, err := getDeployment(ctx, v, workload.Participant)
		if err != nil {
			return err
		}
		c := d.Spec.Template.Spec.Containers[0]
		if e := env(c, "P_VAR"); e == nil || e.Value != "p" {
			return fmt.Errorf("participant env %v, want P_VAR=p", c.Env)
		}
		if got := c.Resources.Limits.Cpu().String(); got != "4" {
			return fmt.Errorf("participant cpu limit %s, want 4 (cpuLimit of version 1)", got)
		}
		return nil
	})
}
