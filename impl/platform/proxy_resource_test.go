package platform_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// applyResource creates (or replaces the spec of) a Validator resource
// directly, as kubectl would: no database row, none of our labels.
func applyResource(t *testing.T, s *apitest.Server, name, scan string, auth map[string]any) {
	t.Helper()
	config := map[string]any{"name": name, "clusterConfig": map[string]any{"scanAddress": scan, "migration": map[string]any{"id": int64(2)}}}
	if auth != nil {
		config["auth"] = auth
	}
	spec := map[string]any{"config": config, "migration": map[string]any{"id": int64(2)}, "customAuth": auth != nil, "externalDatabase": false}
	api := s.Kube.Validators()
	cur, err := api.Get(t.Context(), name, metav1.GetOptions{})
	if err == nil {
		cur.Object["spec"] = spec
		_, err = api.Update(t.Context(), cur, metav1.UpdateOptions{})
	} else {
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": cluster.Group + "/" + cluster.Version, "kind": cluster.Kind, "spec": spec}}
		obj.SetName(name)
		obj.SetNamespace(s.Kube.Namespace)
		_, err = api.Create(t.Context(), obj, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatalf("apply Validator %s: %v", name, err)
	}
}

// TestProxyValidatorResourceOnly: a Validator created with kubectl (a
// resource and perhaps its Secret, no database row) is proxied like one
// created through release 1.11, with its own ledger API client when it
// configures one.
func TestProxyValidatorResourceOnly(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	ctx := t.Context()
	tests := []struct {
		name       string
		auth       map[string]any
		secret     string
		wantClient string
	}{
		{"kubectl-plain", nil, "", "validator-manager"},
		{"kubectl-auth", map[string]any{"ledgerApiClientId": "kubectl-auth-ledger", "audience": "https://ledger.example.test"}, "s3cret", "kubectl-auth-ledger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.secret != "" {
				if err := s.Kube.AddSecret(ctx, domain.LedgerAPIAuthSecretName(tt.name), map[string]string{cluster.LedgerAPIAuthSecretKey: tt.secret}); err != nil {
					t.Fatal(err)
				}
			}
			applyResource(t, s, tt.name, "https://scan.example.test", tt.auth)
			if _, err := s.App.Store.GetValidator(ctx, tt.name); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("database row of %s: got %v, want none", tt.name, err)
			}
			a, err := s.Platform.AllocatePartyWithResponse(ctx, tt.name, &platformapi.AllocatePartyParams{PartyIdHint: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			expect(t, "allocate", a.StatusCode(), a.Body, http.StatusOK)
			l, err := s.Platform.ListPartiesWithResponse(ctx, tt.name, &platformapi.ListPartiesParams{PartyId: ptr("alice")})
			if err != nil {
				t.Fatal(err)
			}
			expect(t, "list parties", l.StatusCode(), l.Body, http.StatusOK)
			if len(*l.JSON200) != 1 || (*l.JSON200)[0].Party != a.JSON200.PartyDetails.Party {
				t.Fatalf("parties: got %s, want only %s", l.Body, a.JSON200.PartyDetails.Party)
			}
			n, err := s.App.Upstreams.For(ctx, tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if n.Target.Credentials == nil || n.Target.Credentials.ClientID != tt.wantClient || n.Target.MigrationID != 2 {
				t.Fatalf("target: got credentials %+v and migration %d, want client %s and migration 2", n.Target.Credentials, n.Target.MigrationID, tt.wantClient)
			}
		})
	}
}

// settled waits until the clients of validator are kept (two calls share
// them: the caches hold its resource and Secret) and returns them.
func settled(t *testing.T, c *upstream.Clients, validator string) *upstream.Node {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	prev, err := c.For(t.Context(), validator)
	for time.Now().Before(deadline) {
		if err != nil {
			t.Fatal(err)
		}
		var n *upstream.Node
		n, err = c.For(t.Context(), validator)
		if err == nil && n == prev {
			return n
		}
		prev = n
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the clients of %s were never kept", validator)
	return nil
}

// TestProxyClientsFollowResource: the clients of a validator are reused
// across calls and rebuilt once its resource or Secret changes; once the
// resource is deleted the validator is no longer proxied.
func TestProxyClientsFollowResource(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	ctx := t.Context()
	const name = "kubectl-rotate"
	auth := map[string]any{"ledgerApiClientId": name + "-ledger"}
	setSecret := func(v string) {
		if err := s.Kube.AddSecret(ctx, domain.LedgerAPIAuthSecretName(name), map[string]string{cluster.LedgerAPIAuthSecretKey: v}); err != nil {
			t.Fatal(err)
		}
	}
	setSecret("first")
	applyResource(t, s, name, "https://scan-a.example.test", auth)
	prev := settled(t, s.App.Upstreams, name)

	tests := []struct {
		name        string
		change      func()
		wantRebuilt bool
		wantSecret  string
	}{
		{"unchanged", func() {}, false, "first"},
		{"resource edited", func() { applyResource(t, s, name, "https://scan-b.example.test", auth) }, true, "first"},
		{"unchanged after the edit", func() {}, false, "first"},
		{"Secret rotated", func() { setSecret("second") }, true, "second"},
		{"unchanged after the rotation", func() {}, false, "second"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.change()
			n := prev
			if tt.wantRebuilt {
				deadline := time.Now().Add(10 * time.Second)
				for n == prev && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
					var err error
					if n, err = s.App.Upstreams.For(ctx, name); err != nil {
						t.Fatal(err)
					}
				}
				n = settled(t, s.App.Upstreams, name)
			}
			for range 3 {
				got, err := s.App.Upstreams.For(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				if got != n {
					t.Fatal("calls without a change: got new clients, want the kept ones")
				}
			}
			if rebuilt := n != prev; rebuilt != tt.wantRebuilt {
				t.Fatalf("rebuilt: got %v, want %v", rebuilt, tt.wantRebuilt)
			}
			if c := n.Target.Credentials; c == nil || c.ClientSecret != tt.wantSecret {
				t.Fatal("credentials: the client secret is not the Secret's current one")
			}
			// The sandbox's token endpoint checks the client secret the call is made with.
			l, err := s.Platform.ListPartiesWithResponse(ctx, name, &platformapi.ListPartiesParams{})
			if err != nil {
				t.Fatal(err)
			}
			expect(t, "list parties", l.StatusCode(), l.Body, http.StatusOK)
			prev = n
		})
	}

	if err := s.Kube.Validators().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		l, err := s.Platform.ListPartiesWithResponse(waitCtx, name, &platformapi.ListPartiesParams{})
		if err == nil && l.StatusCode() == http.StatusNotFound {
			if !strings.Contains(string(l.Body), name) {
				t.Fatalf("404 body %s does not name the validator", l.Body)
			}
			break
		}
		if waitCtx.Err() != nil {
			t.Fatalf("after the resource's deletion: got %v %d, want 404", err, l.StatusCode())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
