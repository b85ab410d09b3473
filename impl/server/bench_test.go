package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// BenchmarkListValidators: GET /api/v1/validators with 1,000 Validator
// resources in the cache, through the whole server (routing, bearer token
// verification, request validation, request id, log line, metrics), against
// a bare echo handler that returns the same bytes. Both over loopback HTTP
// with one keep-alive client.
func BenchmarkListValidators(b *testing.B) {
	s := apitest.Start(b, apitest.Options{})
	ctx := context.Background()
	api := s.Kube.Validators()
	for i := range 1000 {
		if _, err := api.Create(ctx, benchValidator(fmt.Sprintf("validator-%04d", i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Kube.Settle(ctx); err != nil {
		b.Fatal(err)
	}
	body, err := s.App.Cluster.ResourceList(domain.KindValidator)
	if err != nil {
		b.Fatal(err)
	}
	e := echo.New()
	e.GET("/api/v1/validators", func(c echo.Context) error { return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body) })
	bare := httptest.NewServer(e)
	defer bare.Close()
	// The harness's server validates responses against the contract in its
	// client; measure the server itself with a plain one.
	served := httptest.NewServer(s.App.Server)
	defer served.Close()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	get := func(b *testing.B, url string, token bool) {
		req, _ := http.NewRequest(http.MethodGet, url+"/api/v1/validators", nil)
		if token {
			req.Header.Set("Authorization", "Bearer "+s.Token)
		}
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || n != int64(len(body)) {
				b.Fatalf("got %d with %d bytes, want 200 with %d", resp.StatusCode, n, len(body))
			}
		}
	}
	b.Run("server", func(b *testing.B) { get(b, served.URL, true) })
	b.Run("echo", func(b *testing.B) { get(b, bare.URL, false) })
	// Alternating one request to each: both see the same machine load (the
	// machine is shared); reports the server's throughput as a share of
	// the bare handler's.
	b.Run("interleaved", func(b *testing.B) {
		reqs := [2]*http.Request{}
		for i, url := range []string{served.URL, bare.URL} {
			reqs[i], _ = http.NewRequest(http.MethodGet, url+"/api/v1/validators", nil)
		}
		reqs[0].Header.Set("Authorization", "Bearer "+s.Token)
		var spent [2]time.Duration
		for b.Loop() {
			for i, req := range reqs {
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				spent[i] += time.Since(start)
				if resp.StatusCode != http.StatusOK || n != int64(len(body)) {
					b.Fatalf("got %d with %d bytes, want 200 with %d", resp.StatusCode, n, len(body))
				}
			}
		}
		b.ReportMetric(float64(spent[0].Microseconds())/float64(b.N), "server-µs/req")
		b.ReportMetric(float64(spent[1].Microseconds())/float64(b.N), "echo-µs/req")
		b.ReportMetric(100*float64(spent[1])/float64(spent[0]), "%-of-echo-throughput")
	})
}

// benchValidator is a Validator resource of the size 1.11 writes: labels,
// annotations, a configuration with 20 environment variables, a status.
func benchValidator(name string) *unstructured.Unstructured {
	env := make([]any, 20)
	for i := range env {
		env[i] = map[string]any{"name": fmt.Sprintf("VARIABLE_%02d", i), "value": fmt.Sprintf("value-%02d-of-%s", i, name)}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cluster.Group + "/" + cluster.Version,
		"kind":       cluster.Kind,
		"spec": map[string]any{
			"customAuth": false, "externalDatabase": false, "databaseStorage": "10Gi",
			"migration": map[string]any{"id": int64(0), "migrating": false},
			"config": map[string]any{
				"version": int64(1), "imageRepo": "registry.example.com/splice", "imageTag": "0.4.2",
				"clusterConfig": map[string]any{"partyHint": "acme-validator_1", "scanAddress": "https://scan.example.com",
					"svSponsorAddress": "https://sv.example.com", "appInfoValidator": map[string]any{"envVars": env}},
			},
		},
		"status": map[string]any{"phase": "RUNNING", "databaseReady": true},
	}}
	u.SetName(name)
	u.SetLabels(map[string]string{cluster.ManagedByLabel: cluster.ManagedBy, cluster.ValidatorLabel: name})
	u.SetAnnotations(map[string]string{"validator-manager.io/spec-hash": "0123456789abcdef01234567"})
	return u
}
