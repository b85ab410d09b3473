package platform_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/platform"
)

// startConsole runs the server with the sandbox participants' consoles,
// as the embedded default is to wire them.
func startConsole(t testing.TB, idle time.Duration) *apitest.Server {
	t.Helper()
	var s *apitest.Server
	open := func(ctx context.Context, validator string) (platform.ConsoleSession, error) {
		c, err := s.App.Sandbox.OpenConsole(ctx, validator)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	audit := &lateAuditor{}
	s = startWired(t, platform.Options{Console: platform.ConsoleOptions{Open: open, IdleTimeout: idle, Audit: audit}}, func(srv *apitest.Server) {
		audit.a = srv.App.Store
	})
	createValidator(t, s)
	return s
}

type lateAuditor struct{ a platform.Auditor }

func (l *lateAuditor) RecordAudit(ctx context.Context, e domain.AuditEntry) error {
	return l.a.RecordAudit(ctx, e)
}

func consoleURL(s *apitest.Server, validator string) string {
	return "ws" + strings.TrimPrefix(s.URL, "http") + "/api/ws/ledger-console?validator=" + validator
}

// dial opens the console with the token in Authorization.
func dial(t testing.TB, s *apitest.Server, validator string) *websocket.Conn {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + s.Token}}
	c, resp, err := websocket.Dial(t.Context(), consoleURL(s, validator), &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	return c
}

// readTerm reads binary frames until the output contains want.
func readTerm(t testing.TB, c *websocket.Conn, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	for !strings.Contains(out.String(), want) {
		typ, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read for %q: %v (got %q)", want, err, out.String())
		}
		if typ != websocket.MessageBinary {
			t.Fatalf("got a %v frame, want binary", typ)
		}
		out.Write(b)
	}
	return out.String()
}

func send(t testing.TB, c *websocket.Conn, input string) {
	t.Helper()
	if err := c.Write(t.Context(), websocket.MessageBinary, []byte(input)); err != nil {
		t.Fatal(err)
	}
}

// closedWith waits for the server's close frame.
func closedWith(t *testing.T, c *websocket.Conn) (websocket.StatusCode, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		if _, _, err := c.Read(ctx); err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, ce.Reason
			}
			t.Fatalf("read: %v, want a close frame", err)
		}
	}
}

func TestLedgerConsole(t *testing.T) {
	t.Parallel()
	s := startConsole(t, 2*time.Second)
	ctx := t.Context()

	t.Run("bearer header: command, resize, exit", func(t *testing.T) {
		c := dial(t, s, validator)
		defer c.CloseNow()
		readTerm(t, c, "@ ")
		send(t, c, "participant.id\r")
		readTerm(t, c, "PAR::participant-"+validator+"::1220")
		resize, _ := json.Marshal(map[string]any{"type": "resize", "cols": 132, "rows": 43})
		if err := c.Write(ctx, websocket.MessageText, resize); err != nil {
			t.Fatal(err)
		}
		// Unknown control messages are ignored, the session goes on.
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"nope"}`)); err != nil {
			t.Fatal(err)
		}
		send(t, c, "participant.parties.list()\r")
		readTerm(t, c, "ListPartiesResult(party = ")
		send(t, c, "exit\r")
		if code, reason := closedWith(t, c); code != websocket.StatusNormalClosure || reason != "console session ended" {
			t.Fatalf("close: %d %q, want 1000 console session ended", code, reason)
		}
	})

	t.Run("token as subprotocol", func(t *testing.T) {
		// An identity provider's access token easily passes 1 KiB (a
		// Keycloak token with a user's groups and roles): a browser sends
		// it whole in Sec-WebSocket-Protocol.
		groups := make([]string, 40)
		for i := range groups {
			groups[i] = fmt.Sprintf("/organisation/department-%02d/team-operators", i)
		}
		long, err := s.App.Issuer.IssueWith("console-user", time.Hour, map[string]any{"groups": groups})
		if err != nil {
			t.Fatal(err)
		}
		if len(long) < 2048 {
			t.Fatalf("the long token has %d characters, want at least 2048", len(long))
		}
		for name, token := range map[string]string{"short token": s.Token, "long token": long} {
			t.Run(name, func(t *testing.T) {
				c, resp, err := websocket.Dial(ctx, consoleURL(s, validator), &websocket.DialOptions{Subprotocols: []string{"bearer", token}})
				if err != nil {
					t.Fatalf("dial: %v (%v)", err, resp)
				}
				defer c.CloseNow()
				if c.Subprotocol() != "bearer" {
					t.Fatalf("subprotocol %q, want bearer (never the token)", c.Subprotocol())
				}
				readTerm(t, c, "@ ")
				send(t, c, "help\r")
				readTerm(t, c, "participant.health.status")
				c.Close(websocket.StatusNormalClosure, "bye")
			})
		}
	})

	t.Run("refused before the upgrade", func(t *testing.T) {
		tests := []struct {
			name   string
			url    string
			header http.Header
			want   int
			plain  bool // sent as a plain request (a broken handshake)
		}{
			{"no token", consoleURL(s, validator), nil, http.StatusUnauthorized, false},
			{"bad token", consoleURL(s, validator), http.Header{"Authorization": {"Bearer nope"}}, http.StatusUnauthorized, false},
			{"unknown validator", consoleURL(s, "nope"), http.Header{"Authorization": {"Bearer " + s.Token}}, http.StatusNotFound, false},
			{"no Connection: Upgrade", consoleURL(s, validator), http.Header{"Authorization": {"Bearer " + s.Token}, "Upgrade": {"websocket"},
				"Sec-WebSocket-Version": {"13"}, "Sec-WebSocket-Key": {"dGhlIHNhbXBsZSBub25jZQ=="}}, http.StatusBadRequest, true},
			{"no Sec-WebSocket-Key", consoleURL(s, validator), http.Header{"Authorization": {"Bearer " + s.Token}, "Upgrade": {"websocket"},
				"Connection": {"Upgrade"}, "Sec-WebSocket-Version": {"13"}}, http.StatusBadRequest, true},
			{"not a WebSocket", consoleURL(s, validator), http.Header{"Authorization": {"Bearer " + s.Token}, "Upgrade": {"h2c"}}, http.StatusBadRequest, true},
			{"no validator", strings.TrimSuffix(consoleURL(s, ""), "?validator="), http.Header{"Authorization": {"Bearer " + s.Token}}, http.StatusBadRequest, false},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if tt.plain {
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http"+strings.TrimPrefix(tt.url, "ws"), nil)
					req.Header = tt.header
					resp, err := s.HTTP.Do(req) // checked against the contract (error shape)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != tt.want {
						t.Fatalf("got %d, want %d", resp.StatusCode, tt.want)
					}
					return
				}
				_, resp, err := websocket.Dial(ctx, tt.url, &websocket.DialOptions{HTTPHeader: tt.header})
				if err == nil || resp == nil || resp.StatusCode != tt.want {
					t.Fatalf("got %v %v, want %d", resp, err, tt.want)
				}
			})
		}
	})

	t.Run("idle timeout", func(t *testing.T) {
		c := dial(t, s, validator)
		defer c.CloseNow()
		readTerm(t, c, "@ ")
		start := time.Now()
		if code, reason := closedWith(t, c); code != websocket.StatusNormalClosure || reason != "idle timeout" {
			t.Fatalf("close: %d %q, want 1000 idle timeout", code, reason)
		}
		if d := time.Since(start); d < time.Second {
			t.Fatalf("closed after %v, before the idle timeout", d)
		}
	})

	t.Run("one audit entry per session, never the keystrokes", func(t *testing.T) {
		const sessions = 4 // bearer header, two tokens as subprotocol, idle timeout
		var entries []string
		deadline := time.Now().Add(5 * time.Second)
		for {
			all, err := s.App.Store.FindAudit(ctx, domain.AuditFilter{Validator: validator, Page: domain.Page{Limit: 1000}})
			if err != nil {
				t.Fatal(err)
			}
			entries = entries[:0]
			for _, e := range all {
				if e.Operation == "openLedgerConsole" {
					row, _ := json.Marshal(e)
					entries = append(entries, string(row))
				}
			}
			if len(entries) >= sessions || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(entries) != sessions {
			t.Fatalf("audit entries of console sessions: %d, want %d: %v", len(entries), sessions, entries)
		}
		for _, typed := range []string{"participant.parties.list()", "participant.id", s.Token} {
			for _, e := range append(entries, s.Logs()) {
				if strings.Contains(e, typed) {
					t.Fatalf("%q found in %q", typed, e)
				}
			}
		}
	})
}
