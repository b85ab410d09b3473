package server_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/openapi"
)

// TestReadOnlyFieldsRoundTrip sends what a GET answered back through PUT:
// the read-only fields in it are accepted and ignored.
func TestReadOnlyFieldsRoundTrip(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	ctx := t.Context()
	v := validValidator()
	if r, err := s.Management.CreateValidatorWithResponse(ctx, v); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create validator: %v %s", err, body(r))
	}

	t.Run("prune schedule nextRun", func(t *testing.T) {
		prune := `{"cron":"0 0 20 * * ?","maxDuration":"5m","retention":"48h"}`
		if r, err := s.Management.CreatePruneScheduleWithBodyWithResponse(ctx, v.Name, "application/json", strings.NewReader(prune)); err != nil || r.StatusCode()/100 != 2 {
			t.Fatalf("create: %v %s", err, body(r))
		}
		got, err := s.Management.GetPruneScheduleWithResponse(ctx, v.Name)
		if err != nil || got.JSON200 == nil || got.JSON200.NextRun == nil {
			t.Fatalf("get: %v %s, want a schedule with nextRun", err, body(got))
		}
		sent := strings.Replace(string(got.Body), `"retention":"48h"`, `"retention":"72h"`, 1)
		put, err := s.Management.UpdatePruneScheduleWithBodyWithResponse(ctx, v.Name, "application/json", strings.NewReader(sent))
		if err != nil || put.StatusCode()/100 != 2 {
			t.Fatalf("put of the GET body %s: got %v %s, want 2xx", sent, err, body(put))
		}
		after, _ := s.Management.GetPruneScheduleWithResponse(ctx, v.Name)
		if after.JSON200 == nil || after.JSON200.Retention == nil || *after.JSON200.Retention != "72h" {
			t.Fatalf("after put: got %s, want retention 72h", after.Body)
		}
	})

	t.Run("backup schedule nextRun", func(t *testing.T) {
		// What a GET answers, sent to a validator without a schedule: the
		// request passes validation and reaches the handler (404).
		sent := `{"cron":"0 0 * * *","maxBackups":7,"nextRun":"1767225600"}`
		put, err := s.Management.UpdateBackupScheduleWithBodyWithResponse(ctx, v.Name, "application/json", strings.NewReader(sent))
		if err != nil || put.StatusCode() != http.StatusNotFound {
			t.Fatalf("put %s: got %v %s, want 404 from the handler", sent, err, body(put))
		}
	})

	t.Run("remote participant healthStatus and lastHealthCheck", func(t *testing.T) {
		p := remoteParticipant("remote-rt")
		if r, err := s.Management.CreateRemoteParticipantWithResponse(ctx, p); err != nil || r.StatusCode()/100 != 2 {
			t.Fatalf("create: %v %s", err, body(r))
		}
		got, err := s.Management.GetRemoteParticipantWithResponse(ctx, p.Name)
		if err != nil || got.StatusCode() != http.StatusOK {
			t.Fatalf("get: %v %s", err, body(got))
		}
		var dto map[string]any
		if err := json.Unmarshal(got.Body, &dto); err != nil {
			t.Fatal(err)
		}
		// As a GET answers once the health check ran.
		dto["healthStatus"], dto["lastHealthCheck"] = true, "2026-01-01T00:00:00Z"
		dto["ledgerId"] = "ledger-2"
		raw, _ := json.Marshal(dto)
		put, err := s.Management.UpdateRemoteParticipantWithBodyWithResponse(ctx, p.Name, "application/json", strings.NewReader(string(raw)))
		if err != nil || put.StatusCode()/100 != 2 {
			t.Fatalf("put %s: got %v %s, want 2xx", raw, err, body(put))
		}
		after, _ := s.Management.GetRemoteParticipantWithResponse(ctx, p.Name)
		if after.JSON200 == nil || after.JSON200.LedgerId != "ledger-2" || after.JSON200.HealthStatus != nil {
			t.Fatalf("after put: got %s, want ledgerId ledger-2 and the sent healthStatus ignored", after.Body)
		}
	})
}

// TestFormParameters: the operations with "query or form parameters" take a
// form-encoded body as well as a query string.
func TestFormParameters(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	form := url.Values{"userId": {"alice"}, "canActAs": {"alice::1220ab", "bob::1220cd"}, "participantAdmin": {"true"}}
	cases := []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"createUser", "/api/v1/validators/" + validator + "/users", form.Encode(), http.StatusNotFound, "not found"},
		{"createUser without userId", "/api/v1/validators/" + validator + "/users", "canActAs=alice%3A%3A1220ab", http.StatusBadRequest, "userId: is required"},
		{"createUser bad boolean", "/api/v1/validators/" + validator + "/users", "userId=alice&participantAdmin=maybe", http.StatusBadRequest, "participantAdmin"},
		{"updateUser", "/api/v1/validators/" + validator + "/users/alice", "isDeactivated=true&annotation=team%3Dpayments", http.StatusNotFound, "not found"},
		{"updateUserRights", "/api/v1/validators/" + validator + "/users/alice/rights", "canReadAs=carol%3A%3A1220ef", http.StatusNotFound, "not found"},
		{"createUser bad form", "/api/v1/validators/" + validator + "/users", "userId=%zz", http.StatusBadRequest, "form"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+tc.path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Authorization", "Bearer "+s.Token)
			resp, err := s.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct{ Error string }
			_ = json.NewDecoder(resp.Body).Decode(&e)
			if resp.StatusCode != tc.status || !strings.Contains(e.Error, tc.want) {
				t.Fatalf("got %d %q, want %d containing %q", resp.StatusCode, e.Error, tc.status, tc.want)
			}
		})
	}
}

// TestBackupNamePatternIsLinear: the published pattern is the release's
// pattern (anchored) rewritten without nested repetition; both accept the
// same names.
func TestBackupNamePatternIsLinear(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Management()
	if err != nil {
		t.Fatal(err)
	}
	got := doc.Components.Parameters["BackupValidatorName"].Value.Schema.Value.Pattern
	if want := `^[a-z]([-a-z0-9]*[a-z0-9])?$`; got != want {
		t.Fatalf("pattern: got %s, want %s", got, want)
	}
	release := regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?([a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	published := regexp.MustCompile(got)
	const alphabet = "ab09-"
	rng := rand.New(rand.NewPCG(7, 7))
	for range 20000 {
		b := make([]byte, 1+rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if release.Match(b) != published.Match(b) {
			t.Fatalf("%q: release pattern %v, published %v", b, release.Match(b), published.Match(b))
		}
	}
}

// TestOneClientReachesEveryPath: both documents publish the root as their
// one server and full paths, so a client rooted at the server reaches the
// public and the protected operations alike.
func TestOneClientReachesEveryPath(t *testing.T) {
	t.Parallel()
	for name, load := range map[string]func() (*openapi3.T, error){"1.11": openapi.Management, "2.0": openapi.Platform} {
		doc, err := load()
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Servers) != 1 || doc.Servers[0].URL != "/" {
			t.Errorf("%s servers: got %v, want the root only", name, doc.Servers)
		}
		for path, item := range doc.Paths.Map() {
			if len(item.Servers) > 0 {
				t.Errorf("%s %s: path-level servers %v, which generators ignore", name, path, item.Servers)
			}
		}
	}
	s := apitest.Start(t, apitest.Options{})
	ctx := context.Background()
	if r, err := s.Platform.GetHealthWithResponse(ctx); err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("health through the 2.0 client: %v %s", err, body(r))
	}
	if r, err := s.Platform.ListValidatorsWithResponse(ctx, nil); err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("listValidators through the same client: %v %s", err, body(r))
	}
	if r, err := s.Management.ListValidatorsWithResponse(ctx, nil); err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("1.11 listValidators: %v %s", err, body(r))
	}
}

// TestIdentityDumpIsAFile: the contract publishes the dump as bytes.
func TestIdentityDumpIsAFile(t *testing.T) {
	t.Parallel()
	doc, err := openapi.Platform()
	if err != nil {
		t.Fatal(err)
	}
	ok := doc.Paths.Value("/api/v1/validators/{name}/identity-dump").Get.Responses.Value("200").Value
	if ok.Content.Get("application/json") != nil || ok.Content.Get("application/octet-stream") == nil {
		t.Fatalf("content: got %v, want application/octet-stream only", ok.Content)
	}
	if sch := ok.Content.Get("application/octet-stream").Schema.Value; sch.Format != "binary" {
		t.Fatalf("schema format: got %q, want binary", sch.Format)
	}
	if ok.Headers["Content-Disposition"] == nil {
		t.Fatal("no Content-Disposition header declared")
	}
}

func body(r apiResponse) string {
	if r == nil {
		return "<no response>"
	}
	return string(r.GetBody())
}
