package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/openapi"
)

// watchStream is an open watch stream whose events' data are checked
// against the contract's x-event-schema.
type watchStream struct {
	t      *testing.T
	r      *bufio.Reader
	schema *openapi3.Schema
	resp   *http.Response
}

// eventSchema is the x-event-schema of the watch operation at path, in the
// document of the release that serves it.
func eventSchema(t *testing.T, path string) *openapi3.Schema {
	t.Helper()
	load := openapi.Management
	if strings.HasPrefix(path, "/api/v1/") {
		load = openapi.Platform
	}
	doc, err := load()
	if err != nil {
		t.Fatal(err)
	}
	mt := doc.Paths.Value(path).Get.Responses.Value("200").Value.Content.Get("text/event-stream")
	raw, err := json.Marshal(mt.Extensions["x-event-schema"])
	if err != nil {
		t.Fatal(err)
	}
	var s openapi3.Schema
	if err := json.Unmarshal(raw, &s); err != nil || len(s.Properties) == 0 {
		t.Fatalf("%s: x-event-schema %s: %v", path, raw, err)
	}
	return &s
}

func openWatch(t *testing.T, s *apitest.Server, path string, header map[string]string) *watchStream {
	t.Helper()
	schema := eventSchema(t, strings.SplitN(path, "?", 2)[0])
	req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET %s: got %d %s, want 200 text/event-stream", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return &watchStream{t: t, r: bufio.NewReader(resp.Body), schema: schema, resp: resp}
}

// next reads the next event (comments and the retry line skipped); the
// data of validator and deleted events must match the contract.
func (w *watchStream) next() apitest.Event {
	w.t.Helper()
	for {
		e, err := apitest.ReadEvent(w.r)
		if err != nil {
			w.t.Fatalf("reading the stream: %v", err)
		}
		if e = w.checked(e); e.Name != "" {
			return e
		}
	}
}

// checked is e, whose data, for validator and deleted events, must match
// the contract; a heartbeat or retry line has no name.
func (w *watchStream) checked(e apitest.Event) apitest.Event {
	w.t.Helper()
	if e.Name == "validator" || e.Name == "deleted" {
		var v any
		if err := json.Unmarshal([]byte(e.Data), &v); err != nil {
			w.t.Fatalf("event data %s: %v", e.Data, err)
		}
		if err := w.schema.VisitJSON(v); err != nil {
			w.t.Fatalf("event data %s breaks the contract: %v", e.Data, err)
		}
	}
	return e
}

// until reads events until one satisfies ok; after 30 s the stream is
// closed, and the test fails saying what it waited for.
func (w *watchStream) until(what string, ok func(apitest.Event) bool) apitest.Event {
	w.t.Helper()
	var late atomic.Bool
	timer := time.AfterFunc(30*time.Second, func() { late.Store(true); w.resp.Body.Close() })
	defer timer.Stop()
	for {
		e, err := apitest.ReadEvent(w.r)
		if late.Load() {
			w.t.Fatalf("%s: no such event within 30 s", what)
		}
		if err != nil {
			w.t.Fatalf("reading the stream: %v", err)
		}
		if e = w.checked(e); e.Name != "" && ok(e) {
			return e
		}
	}
}

// phaseOf is the status.phase of a 2.0 event's data ("" when it has none).
func phaseOf(t *testing.T, data string) string {
	t.Helper()
	var e struct {
		Status struct {
			Phase string `json:"phase"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(data), &e); err != nil {
		t.Fatalf("event data %s: %v", data, err)
	}
	return e.Status.Phase
}

// TestWatchValidators follows a validator on both releases' streams from
// its creation (PENDING) to RUNNING, past the request timeout, resumes
// after a disconnection, and filters by name.
func TestWatchValidators(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{Watch: true, Config: func(c *config.Config) { c.RequestTimeout = time.Second }})
	ctx := t.Context()
	const v1, v2 = "/api/watch/validators", "/api/v1/watch/validators"
	for _, path := range []string{v1, v2} {
		resp, err := s.HTTP.Get(s.URL + path) // no token
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("GET %s without a token: got %d, want 401", path, resp.StatusCode)
		}
	}
	m := openWatch(t, s, v1, nil)
	p := openWatch(t, s, v2, nil)
	for _, w := range []*watchStream{m, p} {
		if e := w.next(); e.Name != "synced" {
			t.Fatalf("empty namespace: got %+v, want synced at once", e)
		}
	}

	if r, err := s.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("watched")); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", err, r)
	}
	pending := m.until("watched PENDING", func(e apitest.Event) bool { return strings.Contains(e.Data, `"name":"watched"`) })
	if !strings.Contains(pending.Data, `"phase":"PENDING"`) || pending.ID == "" {
		t.Fatalf("first event of a new validator: got %+v, want PENDING with an id", pending)
	}
	p.until("2.0: watched", func(e apitest.Event) bool { return strings.Contains(e.Data, `"name":"watched"`) })

	time.Sleep(1500 * time.Millisecond) // past server.requestTimeout
	if err := s.Kube.SetStatus(ctx, "watched", domain.PhaseRunning, true); err != nil {
		t.Fatal(err)
	}
	running := m.until("watched RUNNING", func(e apitest.Event) bool { return strings.Contains(e.Data, `"phase":"RUNNING"`) })
	p.until("2.0: RUNNING", func(e apitest.Event) bool { return phaseOf(t, e.Data) == "RUNNING" })

	// A client that saw PENDING resumes with RUNNING and nothing older.
	r := openWatch(t, s, v1, map[string]string{"Last-Event-ID": pending.ID})
	if e := r.next(); e.ID != running.ID || !strings.Contains(e.Data, `"phase":"RUNNING"`) {
		t.Fatalf("resumed after %s: got %+v, want RUNNING at %s", pending.ID, e, running.ID)
	}
	if e := r.next(); e.Name != "synced" {
		t.Fatalf("resumed: got %+v, want synced", e)
	}

	// A Validator another installation (or kubectl) made is not followed:
	// the next event after it is the next validator this server manages.
	stranger := &unstructured.Unstructured{Object: map[string]any{"apiVersion": cluster.Group + "/" + cluster.Version, "kind": cluster.Kind, "spec": map[string]any{}}}
	stranger.SetName("stranger")
	if _, err := s.Kube.Validators().Create(ctx, stranger, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("other")); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", err, r)
	}
	for _, w := range []*watchStream{m, p} {
		if e := w.until("the next validator", func(e apitest.Event) bool {
			return e.Name == "validator" && !strings.Contains(e.Data, `"name":"watched"`)
		}); !strings.Contains(e.Data, `"name":"other"`) {
			t.Fatalf("after a validator of no installation: got %+v, want other", e)
		}
	}

	// The name filter.
	f := openWatch(t, s, v2+"?name=other", nil)
	if e := f.next(); !strings.Contains(e.Data, `"name":"other"`) {
		t.Fatalf("filtered: got %+v, want other", e)
	}
	if e := f.next(); e.Name != "synced" {
		t.Fatalf("filtered: got %+v, want synced (watched is filtered out)", e)
	}
}

// TestWatchBadPosition: a resource version that is not one is 400 in the
// release's shape (the contract's pattern).
func TestWatchBadPosition(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{Watch: true})
	for _, path := range []string{"/api/watch/validators?since=x", "/api/v1/watch/validators?since=-1"} {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, s.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+s.Token)
		resp, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %s: got %d, want 400", path, resp.StatusCode)
		}
	}
}

// TestWatchEndsWhenTheTokenExpires: both releases' streams end when the
// token they were opened with expires (`expired`, then `close`), while
// the same server answers every other call with that token 401.
func TestWatchEndsWhenTheTokenExpires(t *testing.T) {
	s := apitest.Start(t, apitest.Options{Watch: true})
	// Expired 24 s ago: accepted for 6 s more (auth.Skew), then refused.
	// Both streams must open within those 6 s (exp is in whole seconds),
	// which 2 s did not leave on a loaded machine.
	token, err := s.App.Issuer.Issue("operator", 6*time.Second-auth.Skew)
	if err != nil {
		t.Fatal(err)
	}
	header := map[string]string{"Authorization": "Bearer " + token}
	const v1, v2 = "/api/watch/validators", "/api/v1/watch/validators"
	streams := []*watchStream{openWatch(t, s, v1, header), openWatch(t, s, v2, header)}
	for _, w := range streams {
		if e := w.next(); e.Name != "synced" {
			t.Fatalf("got %+v, want synced", e)
		}
	}
	for _, w := range streams {
		if e := w.next(); e.Name != "expired" || !strings.Contains(e.Data, `"expiredAt":"`) {
			t.Fatalf("got %+v, want expired", e)
		}
		if e := w.next(); e.Name != "close" || e.Data != `{"reason":"expired"}` {
			t.Fatalf("got %+v, want close with the reason expired", e)
		}
		if e, err := apitest.ReadEvent(w.r); err == nil {
			t.Fatalf("after close: got %+v, want the end of the stream", e)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/validators", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET with the expired token: got %d, want 401", resp.StatusCode)
	}
}
