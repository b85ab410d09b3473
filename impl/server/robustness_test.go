package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/management"
	"github.com/validator-manager/validator-manager/impl/server"
)

// hostile starts a server with small limits, so that the tests can exceed them cheaply.
func hostile(t *testing.T, dsn string) *apitest.Server {
	t.Helper()
	return apitest.Start(t, apitest.Options{Config: func(c *config.Config) {
		c.DatabaseDSN = dsn
		c.BodyReadTimeout = 300 * time.Millisecond
		c.MaxBodyBytes = 4096
		c.MaxHeaderBytes = 4096
	}})
}

// do sends a request through the validating client: every answer must be in
// the contract (an error in its release's shape).
func do(t *testing.T, s *apitest.Server, method, path, contentType string, body io.Reader, token bool) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token {
		req.Header.Set("Authorization", "Bearer "+s.Token)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}

// errorText is the message of either release's error body.
func errorText(t *testing.T, raw []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("error body %q is not a JSON object: %v", raw, err)
	}
	var parts []string
	for k, v := range m {
		if k != "timestamp" && k != "status" {
			parts = append(parts, k+": "+strings.TrimSpace(strings.Trim(string(must(json.Marshal(v))), `"`)))
		}
	}
	return strings.Join(parts, "; ")
}

func must[T any](v T, _ error) T { return v }

// TestSlowBodyIsCut: a client that stops sending its body is disconnected
// after server.bodyReadTimeout, with or without a token; with one, whose
// request reaches the body's read, it is first answered 408 naming the
// setting.
func TestSlowBodyIsCut(t *testing.T) {
	s := hostile(t, "")
	for _, token := range []bool{false, true} {
		name := map[bool]string{false: "without token", true: "with token"}[token]
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			head := "POST /api/remote-participants HTTP/1.1\r\nHost: vm.test\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n"
			if token {
				head += "Authorization: Bearer " + s.Token + "\r\n"
			}
			if _, err := io.WriteString(conn, head+"\r\n{\"name\":"); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_ = conn.SetReadDeadline(start.Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			var raw []byte
			if err == nil {
				raw, err = io.ReadAll(resp.Body)
				if err == nil {
					_, err = conn.Read(make([]byte, 1))
				}
			}
			if token {
				want := "the request body stalled for longer than 300ms (server.bodyReadTimeout)"
				if resp == nil {
					t.Errorf("no answer (%v), want 408 saying %q", err, want)
				} else if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(raw), want) {
					t.Errorf("answer %d %s, want 408 saying %q", resp.StatusCode, raw, want)
				}
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the connection is still open after %s", time.Since(start))
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Fatalf("closed after %s, want about 300ms", took)
			}
		})
	}
}

// TestTricklingBodyIsCut: a JSON body sent a byte at a time, each within
// the read timeout, must still arrive whole within server.requestTimeout.
func TestTricklingBodyIsCut(t *testing.T) {
	s := apitest.Start(t, apitest.Options{Config: func(c *config.Config) {
		c.BodyReadTimeout = 500 * time.Millisecond
		c.RequestTimeout = time.Second
	}})
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := "POST /api/remote-participants HTTP/1.1\r\nHost: vm.test\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n" +
		"Authorization: Bearer " + s.Token + "\r\n\r\n"
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for time.Since(start) < 4*time.Second {
		if _, err := io.WriteString(conn, " "); err != nil {
			break // closed by the server
		}
		time.Sleep(100 * time.Millisecond)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("still writing after %s, want the connection closed after about 1s", took)
	}
}

// TestHostileInput: what no operation accepts is a 400 in the release's
// shape, before any handler or database sees it: on SQLite, and on
// PostgreSQL (which refuses NUL and invalid UTF-8 itself) when
// TEST_POSTGRES_DSN is set.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	prune := `{"cron":"0 0 20 * * ?","maxDuration":"5m","retention":"48h"}`
	big := strings.Repeat("x", 8192)
	cases := []struct {
		name, method, path, contentType, body string
		chunked                               bool // send without a length
		status                                int
		want                                  string
	}{
		{"malformed query 1.11", "GET", "/api/validators?name=%zz", "", "", false, 400, "query: is not a valid query string"},
		{"malformed query 2.0", "GET", "/api/v1/validators/v/participant-lookup?participantUid=p%", "", "", false, 400, "query: is not a valid query string"},
		{"NUL in a 1.11 filter", "GET", "/api/validators?name=a%00b", "", "", false, 400, "name: must not contain NUL"},
		{"invalid UTF-8 in a 1.11 filter", "GET", "/api/remote-participants?name=%ff%fe", "", "", false, 400, "name: must be valid UTF-8"},
		{"NUL in a 1.11 path parameter", "GET", "/api/remote-participants/a%00b", "", "", false, 400, "name: must not contain NUL"},
		{"invalid UTF-8 in a 1.11 path parameter", "DELETE", "/api/validators/%c3%28/prune", "", "", false, 400, "name: must be valid UTF-8"},
		{"NUL in a 2.0 path parameter", "GET", "/api/v1/validators/a%00b", "", "", false, 400, "name: must not contain NUL"},
		{"invalid UTF-8 in a 2.0 query", "GET", "/api/v1/validators/v/participant-lookup?participantUid=p%ff", "", "", false, 400, "participantUid: must be valid UTF-8"},
		{"NUL in a JSON name", "POST", "/api/remote-participants", "application/json",
			`{"name":"a\u0000b","adminAddress":"h","adminPort":"1","ledgerAddress":"h","ledgerPort":"2","ledgerId":"l","jsonApiUrl":"u","authProvider":"custom","image":"i"}`,
			false, 400, "name: must not contain NUL"},
		{"invalid UTF-8 in a JSON body", "PUT", "/api/validators/v/prune", "application/json",
			"{\"cron\":\"\xff\",\"maxDuration\":\"5m\",\"retention\":\"48h\"}", false, 400, "body: must be valid UTF-8"},
		{"content after the JSON body", "PUT", "/api/validators/v/prune", "application/json", prune + " xyz", false, 400, "body: has content after the JSON document"},
		{"two JSON documents", "PUT", "/api/validators/v/prune", "application/json", prune + prune, false, 400, "body: has content after the JSON document"},
		{"oversized chunked body 1.11", "PUT", "/api/validators/v/prune", "application/json", `{"cron":"` + big + `"}`, true, 413, "too large"},
		{"oversized chunked body 2.0", "POST", "/api/v1/validators/v/wallet-users", "application/json", `{"name":"` + big + `"}`, true, 413, "too large"},
	}
	backends := map[string]string{"sqlite": ""}
	if os.Getenv("TEST_POSTGRES_DSN") != "" {
		backends["postgres"] = apitest.ThrowawayPostgres(t)
	}
	for backend, dsn := range backends {
		s := hostile(t, dsn)
		for _, tc := range cases {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				var body io.Reader
				if tc.body != "" {
					body = strings.NewReader(tc.body)
					if tc.chunked {
						body = io.MultiReader(body) // hides the length: Transfer-Encoding: chunked
					}
				}
				resp, raw := do(t, s, tc.method, tc.path, tc.contentType, body, true)
				if resp.StatusCode != tc.status || !strings.Contains(errorText(t, raw), tc.want) {
					t.Fatalf("got %d %s, want %d containing %q", resp.StatusCode, raw, tc.status, tc.want)
				}
			})
		}
	}
}

// TestFrameworkErrorsInShape: 401 challenges in both releases, HEAD answers
// like GET, oversized headers are a 431 in the release's shape.
func TestFrameworkErrorsInShape(t *testing.T) {
	t.Parallel()
	s := hostile(t, "")
	t.Run("1.11 401 challenges", func(t *testing.T) {
		resp, raw := do(t, s, "GET", "/api/validators", "", nil, false)
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != "Bearer" {
			t.Fatalf("got %d WWW-Authenticate=%q %s, want 401 with Bearer", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), raw)
		}
	})
	for _, tc := range []struct {
		path   string
		token  bool
		status int
	}{
		{"/actuator/health", false, 200},
		{"/api/validators", true, 200},
		{"/api/validators", false, 401},
		{"/api/v1/validators", true, 200},
	} {
		t.Run("HEAD "+tc.path, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodHead, s.URL+tc.path, nil)
			if tc.token {
				req.Header.Set("Authorization", "Bearer "+s.Token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("got %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
	for _, path := range []string{"/api/validators", "/api/v1/validators", "/actuator/health"} {
		t.Run("431 "+path, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+path, nil)
			req.Header.Set("X-Padding", strings.Repeat("p", 8000))
			resp, err := s.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !strings.Contains(errorText(t, raw), "too large") {
				t.Fatalf("got %d %s, want 431 in the release's shape", resp.StatusCode, raw)
			}
		})
	}
}

// TestDatabaseOutage: 503 naming the database, not a bare 500.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	if err := s.App.Store.Close(); err != nil {
		t.Fatal(err)
	}
	resp, raw := do(t, s, "GET", "/api/validators", "", nil, true)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(errorText(t, raw), "database") {
		t.Fatalf("got %d %s, want 503 naming the database", resp.StatusCode, raw)
	}
}

// TestRequestLog: an expected 4xx is not an ERROR, and latency has a unit.
func TestRequestLog(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	if resp, _ := do(t, s, "GET", "/api/v1/validators/v1/wallet-gateway/wallets", "", nil, true); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("got %d, want 404 (no validator v1)", resp.StatusCode)
	}
	var found bool
	for _, line := range bytes.Split([]byte(s.Logs()), []byte("\n")) {
		var rec map[string]any
		if json.Unmarshal(line, &rec) != nil {
			continue
		}
		if rec["level"] == "ERROR" {
			t.Errorf("logged at ERROR: %s", line)
		}
		if rec["msg"] == "request" && rec["path"] == "/api/v1/validators/v1/wallet-gateway/wallets" {
			found = true
			if _, ok := rec["latency_ms"].(float64); !ok {
				t.Errorf("got %s, want latency_ms in milliseconds", line)
			}
		}
	}
	if !found {
		t.Fatalf("no request line in %s", s.Logs())
	}
}

// slowManagement takes longer than the body read timeout after reading the body.
type slowManagement struct{ *management.Server }

func (m slowManagement) CreateRemoteParticipant(ctx context.Context, req managementapi.CreateRemoteParticipantRequestObject) (managementapi.CreateRemoteParticipantResponseObject, error) {
	time.Sleep(time.Second)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return m.Server.CreateRemoteParticipant(ctx, req)
}

func (m slowManagement) ListValidators(ctx context.Context, req managementapi.ListValidatorsRequestObject) (managementapi.ListValidatorsResponseObject, error) {
	time.Sleep(time.Second)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return m.Server.ListValidators(ctx, req)
}

// TestSlowHandlerAfterBody: the body deadline ends with the body (and does
// not apply without one); a handler that works longer keeps its request.
func TestSlowHandlerAfterBody(t *testing.T) {
	s := apitest.Start(t, apitest.Options{
		Config: func(c *config.Config) { c.BodyReadTimeout = 200 * time.Millisecond },
		App: []app.Option{app.With(func(o *server.Options) {
			o.Management = slowManagement{o.Management.(*management.Server)}
		})},
	})
	r, err := s.Management.CreateRemoteParticipantWithResponse(t.Context(), remoteParticipant("slow"))
	if err != nil || r.StatusCode()/100 != 2 {
		t.Fatalf("got %v %s, want the participant created", err, body(r))
	}
	// A fresh connection, where net/http reads ahead in the background at once.
	fresh, err := managementapi.NewClientWithResponses(s.URL,
		managementapi.WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}),
		managementapi.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+s.Token)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	l, err := fresh.ListValidatorsWithResponse(t.Context(), nil)
	if err != nil || l.StatusCode() != http.StatusOK {
		t.Fatalf("got %v %s, want the list", err, body(l))
	}
}
