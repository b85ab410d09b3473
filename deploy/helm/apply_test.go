package helm_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// objects parses rendered manifests into objects, ordered by template file.
func objects(t *testing.T, out map[string]string) []*unstructured.Unstructured {
	t.Helper()
	files := make([]string, 0, len(out))
	for name := range out {
		files = append(files, name)
	}
	slices.Sort(files)
	var objs []*unstructured.Unstructured
	for _, name := range files {
		if strings.HasSuffix(name, ".tpl") {
			continue
		}
		for _, doc := range strings.Split(out[name], "\n---") {
			var m map[string]any
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, doc)
			}
			if m != nil {
				objs = append(objs, &unstructured.Unstructured{Object: m})
			}
		}
	}
	return objs
}

// warnings keeps the API server's warnings (deprecated APIs, dropped fields).
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// applier writes objects by server-side apply as Helm's field manager would,
// with strict field validation, to the suite's API server.
type applier struct {
	dyn      dynamic.Interface
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	warnings *warnings
}

func newApplier(t *testing.T, cfg *rest.Config) *applier {
	t.Helper()
	w := &warnings{}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = w
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), warnings: w}
}

// apply applies obj in namespace (where it is namespaced); dryRun asks the
// API server to admit and validate it without storing it.
func (a *applier) apply(ctx context.Context, namespace string, obj *unstructured.Unstructured, dryRun bool) error {
	gvk := obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s is not served: %w", gvk, err)
	}
	res := dynamic.ResourceInterface(a.dyn.Resource(m.Resource))
	if m.Scope.Name() == "namespace" {
		obj = obj.DeepCopy()
		obj.SetNamespace(namespace)
		res = a.dyn.Resource(m.Resource).Namespace(namespace)
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: "helm", Force: &force, FieldValidation: metav1.FieldValidationStrict}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = res.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, opts)
	return err
}

// newNamespace creates a namespace of the test's own on the suite's API
// server (the envtest server has no namespace controller to delete it).
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	core := kubernetes.NewForConfigOrDie(apiServer)
	ns := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%1_000_000)
	if _, err := core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// The chart's manifests are admitted by a real API server: every object is
// applied with a server-side dry run (schema, strict field validation,
// admission, RBAC's escalation check on the Role) after the chart's CRDs
// were installed for real, with every optional object rendered.
func TestChartAppliesToAPIServer(t *testing.T) {
	if apiServer == nil {
		t.Skip(skipNoServer)
	}
	tests := []struct {
		name   string
		values map[string]any
		kinds  []string
	}{
		{"defaults", nil, []string{"ConfigMap", "Deployment", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "Service", "ServiceAccount"}},
		{"everything on", map[string]any{
			"replicaCount": 2,
			"ingress": map[string]any{
				"enabled":   true,
				"className": "traefik",
				"host":      "vm.example.test",
				"tls":       []any{map[string]any{"hosts": []any{"vm.example.test"}, "secretName": "vm-tls"}},
			},
			"serviceMonitor": map[string]any{"enabled": true, "interval": "15s"},
			"keycloak":       map[string]any{"clientSecret": map[string]any{"name": "keycloak-admin"}},
			"config": map[string]any{
				"api": map[string]any{"ingress": map[string]any{"middlewares": "auth-docs@kubernetescrd"},
					"metrics": map[string]any{"public": true}},
				"idp":      map[string]any{"mode": "keycloak", "keycloak": map[string]any{"url": "https://keycloak.example.test", "clientId": "vm"}},
				"server":   map[string]any{"pprofListen": "127.0.0.1:6060"},
				"outbound": map[string]any{"allowedHosts": "*.scan.test", "allowHttp": true},
				"splice":   map[string]any{"charts": "oci://registry.example.test/helm", "chartValues": "/etc/vm/chart-values.yaml"},
			},
		}, []string{"Ingress", "ServiceMonitor", "PodDisruptionBudget"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := newNamespace(t, "chart")
			out, err := renderIn(t, ns, tt.values)
			if err != nil {
				t.Fatal(err)
			}
			a := newApplier(t, apiServer)
			var kinds []string
			for _, obj := range objects(t, out) {
				kinds = append(kinds, obj.GetKind())
				if err := a.apply(context.Background(), ns, obj, true); err != nil {
					t.Errorf("the API server refuses %s %s: %v", obj.GetKind(), obj.GetName(), err)
				}
				for _, w := range a.warnings.take() {
					t.Errorf("%s %s: warning: %s", obj.GetKind(), obj.GetName(), w)
				}
			}
			for _, k := range tt.kinds {
				if !slices.Contains(kinds, k) {
					t.Errorf("no %s among %v", k, kinds)
				}
			}
		})
	}
}
