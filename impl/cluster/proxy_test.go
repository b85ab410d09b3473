package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestProxySource: what release 2.0's proxy reads of a validator made by
// hand (no labels, no database row): its resource, decoded, from the cache
// or, before the cache has it, from the API server; the resourceVersions of
// the resource and of its ledger API auth Secret, which change with them;
// and its deletion. On a real API server (KUBEBUILDER_ASSETS).
func TestProxySource(t *testing.T) {
	core, dyn := realClients(t)
	c := clients{core, dyn, newNamespace(t, "p")}
	{
		{
			ctx := context.Background()
			const name = "by-hand"
			validators := c.dyn.Resource(cluster.ValidatorResource).Namespace(c.ns)
			secrets := c.core.CoreV1().Secrets(c.ns)
			k, startKube, _ := gatewayOn(t, realServer, c.ns, cluster.KubeOptions{})
			var (
				mu      sync.Mutex
				deleted []string
			)
			k.OnValidatorDeleted(func(n string) { mu.Lock(); deleted = append(deleted, n); mu.Unlock() })
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": cluster.Group + "/" + cluster.Version,
				"kind":       cluster.Kind,
				"spec": map[string]any{
					"config":    map[string]any{"name": name, "clusterConfig": map[string]any{"scanAddress": "https://scan.example.test"}},
					"migration": map[string]any{"id": int64(3)},
				},
			}}
			obj.SetName(name)
			obj.SetNamespace(c.ns)
			if _, err := validators.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// Not started: no cache, the API server answers.
			if _, _, ok := k.ValidatorRevision(name); ok {
				t.Fatal("revision before the cache started: got one, want none")
			}
			v, err := k.TypedValidator(ctx, name)
			if err != nil || v.Spec.Config.Cluster.ScanAddress != "https://scan.example.test" || v.Spec.Migration.ID != 3 {
				t.Fatalf("from the API server: got %v, %v; want the resource's scan address and migration 3", v, err)
			}
			startKube()

			// revisions waits until the cache's revisions satisfy cond.
			revisions := func(what string, cond func(v, s string, ok bool) bool) (string, string) {
				t.Helper()
				var v, s string
				within(t, func() error {
					var ok bool
					if v, s, ok = k.ValidatorRevision(name); !cond(v, s, ok) {
						return fmt.Errorf("%s: got %q, %q, %v", what, v, s, ok)
					}
					return nil
				})
				return v, s
			}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: domain.LedgerAPIAuthSecretName(name), Namespace: c.ns},
				Data: map[string][]byte{cluster.LedgerAPIAuthSecretKey: []byte("first")}}
			var vRV, sRV string
			steps := []struct {
				name   string
				change func()
				want   func(v, s string, ok bool) bool
			}{
				{"cached, no Secret", func() {}, func(v, s string, ok bool) bool { return ok && v != "" && s == "" }},
				{"Secret created", func() {
					if _, err := secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				}, func(v, s string, ok bool) bool { return ok && v == vRV && s != "" }},
				{"Secret rotated", func() {
					cur, err := secrets.Get(ctx, secret.Name, metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					cur.Data[cluster.LedgerAPIAuthSecretKey] = []byte("second")
					if _, err := secrets.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				}, func(v, s string, ok bool) bool { return ok && v == vRV && s != "" && s != sRV }},
				{"resource edited", func() {
					cur, err := validators.Get(ctx, name, metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if err := unstructured.SetNestedField(cur.Object, "https://scan-b.example.test", "spec", "config", "clusterConfig", "scanAddress"); err != nil {
						t.Fatal(err)
					}
					if _, err := validators.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				}, func(v, s string, ok bool) bool { return ok && v != vRV && s == sRV }},
				{"resource deleted", func() {
					if err := validators.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
				}, func(_, _ string, ok bool) bool { return !ok }},
			}
			for _, st := range steps {
				st.change()
				vRV, sRV = revisions(st.name, st.want)
			}
			// The deletion handler is the informer's, run on a goroutine of
			// its own: it may see the deletion after the cache's store does.
			within(t, func() error {
				mu.Lock()
				got := strings.Join(deleted, ",")
				mu.Unlock()
				if got != name {
					return fmt.Errorf("deletions seen: got %q, want %q", got, name)
				}
				return nil
			})
			within(t, func() error {
				if _, err := k.TypedValidator(ctx, name); !errors.Is(err, domain.ErrNotFound) || !strings.Contains(err.Error(), `validator "by-hand" not found`) {
					return fmt.Errorf("after deletion: got %v, want not found", err)
				}
				return nil
			})
		}
	}
}
