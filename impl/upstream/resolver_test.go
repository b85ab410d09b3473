package upstream_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// fakeResources stands for the cluster gateway: Validator resources on the
// API server, which of them its cache holds, and the resourceVersions of
// their ledger API auth Secrets in its cache.
type fakeResources struct {
	validators map[string]*v1alpha1.Validator
	uncached   map[string]bool
	secretRVs  map[string]string
}

func (f *fakeResources) ValidatorRevision(name string) (string, string, bool) {
	v, ok := f.validators[name]
	if !ok || f.uncached[name] {
		return "", "", false
	}
	return v.ResourceVersion, f.secretRVs[name], true
}

func (f *fakeResources) TypedValidator(_ context.Context, name string) (*v1alpha1.Validator, error) {
	v, ok := f.validators[name]
	if !ok {
		return nil, domain.NotFound("validator %q not found", name)
	}
	return v.DeepCopy(), nil
}

func resource(name, rv, scan string, auth *v1alpha1.Auth) *v1alpha1.Validator {
	return &v1alpha1.Validator{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv},
		Spec: v1alpha1.ValidatorSpec{
			Migration: v1alpha1.MigrationSpec{ID: 4},
			Config:    v1alpha1.ValidatorConfig{Name: name, Auth: auth, Cluster: v1alpha1.Cluster{ScanAddress: scan}},
		},
	}
}

// TestResourceRecords: a validator that exists only as a Validator resource
// resolves by the Helm convention, with its scan, migration and ledger API
// client from the resource and the client secret from its Secret.
func TestResourceRecords(t *testing.T) {
	authority := "https://kc.test/realms/r/"
	res := &fakeResources{validators: map[string]*v1alpha1.Validator{
		"plain":  resource("plain", "1", "https://scan.test/api/scan/", nil),
		"custom": resource("custom", "2", "https://scan.test", &v1alpha1.Auth{LedgerAPIClient: "ledger-client", Audience: "https://ledger.test", OIDCAuthorityURL: &authority}),
		"nokey":  resource("nokey", "3", "https://scan.test", nil),
	}}
	r := upstream.ClusterResolver{Records: upstream.ResourceRecords{Resources: res}, Secrets: fakeSecrets{"custom": "s3cret", "nokey": "s"}, Namespace: "ns"}
	tests := []struct {
		name      string
		validator string
		wantCreds *upstream.Credentials
		wantErr   error
	}{
		{"no Secret: no token", "plain", nil, nil},
		{"client from the resource, secret from the Secret", "custom", &upstream.Credentials{
			TokenURL: "https://kc.test/realms/r/protocol/openid-connect/token", ClientID: "ledger-client", ClientSecret: "s3cret", Audience: "https://ledger.test"}, nil},
		{"a Secret but no client id", "nokey", nil, domain.ErrUnavailable},
		{"no resource", "absent", nil, domain.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tgt, err := r.Resolve(t.Context(), tt.validator)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tgt.LedgerURL != domain.JSONAPIURL(tt.validator, "ns") || tgt.ValidatorAppURL != domain.ValidatorAppURL(tt.validator, "ns") ||
				tgt.ScanURL != "https://scan.test" || tgt.MigrationID != 4 {
				t.Fatalf("got %+v, want the Helm convention's addresses, scan https://scan.test and migration 4", tgt)
			}
			switch {
			case tt.wantCreds == nil && tgt.Credentials != nil:
				t.Fatalf("credentials: got %+v, want none", tgt.Credentials)
			case tt.wantCreds != nil && (tgt.Credentials == nil || *tgt.Credentials != *tt.wantCreds):
				t.Fatalf("credentials: got %+v, want %+v", tgt.Credentials, tt.wantCreds)
			}
		})
	}
}

// countingResolver counts the targets resolved.
type countingResolver struct {
	upstream.Resolver
	mu       sync.Mutex
	resolved int
}

func (c *countingResolver) Resolve(ctx context.Context, name string) (upstream.Target, error) {
	c.mu.Lock()
	c.resolved++
	c.mu.Unlock()
	return c.Resolver.Resolve(ctx, name)
}

// TestClientsKeptByRevision: a validator's clients are reused while its
// resource and Secret stay, rebuilt when either changes, built for the one
// call while the cache lacks the resource, and dropped with the resource.
func TestClientsKeptByRevision(t *testing.T) {
	res := &fakeResources{
		validators: map[string]*v1alpha1.Validator{"v1": resource("v1", "10", "https://scan-a.test", &v1alpha1.Auth{LedgerAPIClient: "c"})},
		uncached:   map[string]bool{},
		secretRVs:  map[string]string{"v1": "20"},
	}
	secrets := fakeSecrets{"v1": "first"}
	inner := &countingResolver{Resolver: upstream.ClusterResolver{Records: upstream.ResourceRecords{Resources: res}, Secrets: secrets, Namespace: "ns", TokenURL: "https://token.test/token"}}
	c := upstream.New(upstream.Options{Resolver: inner, Revisions: res})
	first, err := c.For(t.Context(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		change      func()
		wantRebuilt bool
		wantScan    string
		wantSecret  string
		wantErr     error
	}{
		{"unchanged", func() {}, false, "https://scan-a.test", "first", nil},
		{"unchanged again", func() {}, false, "https://scan-a.test", "first", nil},
		{"resource changed", func() {
			res.validators["v1"] = resource("v1", "11", "https://scan-b.test", &v1alpha1.Auth{LedgerAPIClient: "c"})
		}, true, "https://scan-b.test", "first", nil},
		{"unchanged after the resource's change", func() {}, false, "https://scan-b.test", "first", nil},
		{"Secret changed", func() { res.secretRVs["v1"], secrets["v1"] = "21", "second" }, true, "https://scan-b.test", "second", nil},
		{"unchanged after the Secret's change", func() {}, false, "https://scan-b.test", "second", nil},
		{"not in the cache yet: built for the call", func() { res.uncached["v1"] = true }, true, "https://scan-b.test", "second", nil},
		{"still not in the cache: built again", func() {}, true, "https://scan-b.test", "second", nil},
		{"in the cache again", func() { delete(res.uncached, "v1") }, true, "https://scan-b.test", "second", nil},
		{"kept once more", func() {}, false, "https://scan-b.test", "second", nil},
		{"resource deleted", func() { delete(res.validators, "v1") }, false, "", "", domain.ErrNotFound},
		{"recreated at the same revisions: not the dropped clients", func() {
			res.validators["v1"] = resource("v1", "11", "https://scan-b.test", &v1alpha1.Auth{LedgerAPIClient: "c"})
		}, true, "https://scan-b.test", "second", nil},
		{"forgotten", func() { c.Forget("v1") }, true, "https://scan-b.test", "second", nil},
	}
	prev := first
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.change()
			before := inner.resolved
			n, err := c.For(t.Context(), "v1")
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("got %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rebuilt := n != prev; rebuilt != tt.wantRebuilt {
				t.Fatalf("rebuilt: got %v, want %v", rebuilt, tt.wantRebuilt)
			}
			if resolved := inner.resolved - before; resolved != map[bool]int{false: 0, true: 1}[tt.wantRebuilt] {
				t.Fatalf("resolutions: got %d, want %d", resolved, map[bool]int{false: 0, true: 1}[tt.wantRebuilt])
			}
			if n.Target.ScanURL != tt.wantScan || n.Target.Credentials == nil || n.Target.Credentials.ClientSecret != tt.wantSecret {
				t.Fatalf("got scan %q and credentials %+v, want scan %q and secret %q", n.Target.ScanURL, n.Target.Credentials, tt.wantScan, tt.wantSecret)
			}
			prev = n
		})
	}

	// Concurrent calls share the kept clients.
	var wg sync.WaitGroup
	nodes := make([]*upstream.Node, 8)
	for i := range nodes {
		wg.Go(func() {
			n, err := c.For(context.Background(), "v1")
			if err != nil {
				t.Error(err)
			}
			nodes[i] = n
		})
	}
	wg.Wait()
	for _, n := range nodes {
		if n != prev {
			t.Fatal("concurrent calls: got other clients, want the kept ones")
		}
	}
}
