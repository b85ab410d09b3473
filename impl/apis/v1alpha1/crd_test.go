package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
)

var (
	validators = v1alpha1.GroupVersion.WithResource("validators")
	namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// TestStoredValidatorsReadWholeAfterUpgrade: a Validator that an older
// server wrote, under the CRD it installed, reads back under the current CRD
// with nothing pruned, whatever the version of its spec.config. The CRDs of
// the earlier layouts are kept in testdata as those servers installed them:
// layout 0 (spec.config without a schema, config versions 0 and 1) and
// layout 1 (spec.config typed after config version 1).
func TestStoredValidatorsReadWholeAfterUpgrade(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("set KUBEBUILDER_ASSETS to a folder with kube-apiserver and etcd (testdata/envtest/build.sh)")
	}
	ctrllog.SetLogger(logr.Discard())
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	current := filepath.Join("..", "..", "..", "deploy", "crds", "validator-manager.io_validators.yaml")
	for i, tc := range []struct {
		name, crd, config string
	}{
		{"layout 0, config version 0", "testdata/crd-layout-0.yaml", "../../management/testdata/stored-config-v0.json"},
		{"layout 0, config version 1", "testdata/crd-layout-0.yaml", "testdata/stored-config-v1.json"},
		{"layout 1, config version 1", "testdata/crd-layout-1.yaml", "testdata/stored-config-v1.json"},
		{"current layout, config version 2", current, "../../management/testdata/stored-config-v2.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			raw, err := os.ReadFile(tc.config)
			if err != nil {
				t.Fatal(err)
			}
			var config map[string]any
			if err := json.Unmarshal(raw, &config); err != nil {
				t.Fatal(err)
			}
			ns := fmt.Sprintf("upgrade-%d", i)
			if _, err := dyn.Resource(namespaces).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns},
			}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			installCRD(t, cfg, tc.crd, ns, fmt.Sprintf("old-%d", i))
			written := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Validator",
				"metadata": map[string]any{"name": "stored", "namespace": ns},
				"spec": map[string]any{"config": config, "customAuth": false, "externalDatabase": false,
					"migration": map[string]any{"id": int64(3), "migrating": false}},
			}}
			if _, err := dyn.Resource(validators).Namespace(ns).Create(ctx, written, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create under the old CRD: %v", err)
			}
			before, err := dyn.Resource(validators).Namespace(ns).Get(ctx, "stored", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}

			installCRD(t, cfg, current, ns, fmt.Sprintf("current-%d", i))
			after, err := dyn.Resource(validators).Namespace(ns).Get(ctx, "stored", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(after.Object["spec"], before.Object["spec"]) {
				b, _ := json.Marshal(before.Object["spec"])
				a, _ := json.Marshal(after.Object["spec"])
				t.Fatalf("spec read under the current CRD differs from the stored one\nstored: %s\nread:   %s", b, a)
			}
			// What the old server stored is the whole configuration it wrote.
			stored, err := json.Marshal(after.Object["spec"].(map[string]any)["config"])
			if err != nil {
				t.Fatal(err)
			}
			want, err := v1alpha1.DecodeValidatorConfig(raw)
			if err != nil {
				t.Fatal(err)
			}
			got, err := v1alpha1.DecodeValidatorConfig(stored)
			if err != nil {
				t.Fatalf("decode spec.config read under the current CRD: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("spec.config read under the current CRD decodes to\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// installCRD creates or updates the Validator CRD from file and waits until
// the API server serves it: the CRD gets a printer column named probe, and
// a table read in namespace ns shows it once the new definition is served.
func installCRD(t *testing.T, cfg *rest.Config, file, ns, probe string) {
	t.Helper()
	opts := envtest.CRDInstallOptions{Paths: []string{file}, ErrorIfPathMissing: true}
	if err := envtest.ReadCRDFiles(&opts); err != nil {
		t.Fatal(err)
	}
	for _, crd := range opts.CRDs {
		for i := range crd.Spec.Versions {
			crd.Spec.Versions[i].AdditionalPrinterColumns = append(crd.Spec.Versions[i].AdditionalPrinterColumns,
				apiextensionsv1.CustomResourceColumnDefinition{Name: probe, Type: "string", JSONPath: ".metadata.name"})
		}
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: opts.CRDs}); err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("%s/apis/%s/namespaces/%s/validators", strings.TrimSuffix(cfg.Host, "/"), v1alpha1.GroupVersion, ns)
	const wait = 30 * time.Second
	deadline := time.Now().Add(wait)
	for {
		columns, err := tableColumns(hc, url)
		if err == nil && slices.Contains(columns, probe) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("CRD %s not served after %v (%s: columns %v, %v)", file, wait, url, columns, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tableColumns(hc *http.Client, url string) ([]string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(table.ColumnDefinitions))
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	return names, nil
}
