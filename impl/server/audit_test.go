package server_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/platform"
	"github.com/validator-manager/validator-manager/impl/server"
)

// countingUpstream stands for the upstream mutation: it counts the
// allocations that reached it.
type countingUpstream struct {
	*platform.Server
	calls *atomic.Int32
}

func (u countingUpstream) AllocateParty(_ context.Context, req platformapi.AllocatePartyRequestObject) (platformapi.AllocatePartyResponseObject, error) {
	u.calls.Add(1)
	return platformapi.AllocateParty200JSONResponse{PartyDetails: platformapi.PartyDetails{Party: req.Params.PartyIdHint + "::1220ab"}}, nil
}

// TestAuditBeforeMutation: while the audit log cannot be written (another
// connection holds the database's write lock: SQLite's BEGIN IMMEDIATE, a
// PostgreSQL table lock), a mutating call is 503 in release 2.0's shape and
// never reaches the upstream; once the lock is released the same call is
// attempted and audited as done.
func TestAuditBeforeMutation(t *testing.T) {
	t.Parallel()
	type locker func(t *testing.T, cfg config.Config) (release func())
	sqliteLock := func(t *testing.T, cfg config.Config) func() {
		// The server's own writers may hold the lock a moment (its
		// controllers at start, slow on a loaded machine): wait for them.
		db, err := sql.Open("sqlite3", "file:"+filepath.Join(cfg.DataDir, "validator-manager.db")+"?_busy_timeout=20000")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		return func() {
			if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
			conn.Close()
		}
	}
	pgLock := func(t *testing.T, cfg config.Config) func() {
		conn, err := pgx.Connect(context.Background(), cfg.DatabaseDSN)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		// EXCLUSIVE conflicts with the ROW EXCLUSIVE lock an INSERT takes.
		if _, err := conn.Exec(context.Background(), "BEGIN; LOCK TABLE audit_log IN EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		return func() {
			if _, err := conn.Exec(context.Background(), "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
		}
	}
	backends := map[string]struct {
		dsn  func(t *testing.T) string
		lock locker
	}{
		"sqlite":   {func(*testing.T) string { return "" }, sqliteLock},
		"postgres": {func(t *testing.T) string { return apitest.ThrowawayPostgres(t) }, pgLock},
	}
	for name, b := range backends {
		t.Run(name, func(t *testing.T) {
			dsn := b.dsn(t)
			if name == "postgres" && dsn == "" {
				t.Skip("TEST_POSTGRES_DSN is not set: PostgreSQL is not tested")
			}
			var cfg config.Config
			var calls atomic.Int32
			s := apitest.Start(t, apitest.Options{
				Config: func(c *config.Config) { c.DatabaseDSN = dsn; cfg = *c },
				App: []app.Option{app.With(func(o *server.Options) {
					o.Platform = countingUpstream{Server: o.Platform.(*platform.Server), calls: &calls}
				})},
			})
			release := b.lock(t, cfg)
			resp, raw := do(t, s, "POST", "/api/v1/validators/v1/parties?partyIdHint=held", "", nil, true)
			var body struct {
				Status int    `json:"status"`
				Error  string `json:"error"`
			}
			if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(raw, &body) != nil || body.Status != 503 ||
				!strings.Contains(body.Error, "audit log") || !strings.Contains(body.Error, "not attempted") {
				t.Fatalf("under the lock: got %d %s, want 503 naming the audit log", resp.StatusCode, raw)
			}
			if n := calls.Load(); n != 0 {
				t.Fatalf("the mutation was attempted %d times without an audit record", n)
			}
			// Release 1.11 likewise, in its shape.
			held, err := s.Management.CreateRemoteParticipantWithResponse(t.Context(), remoteParticipant("held"))
			if err != nil || held.StatusCode() != http.StatusServiceUnavailable || !strings.Contains(managementError(t, held)["error"], "not attempted") {
				t.Fatalf("1.11 under the lock: got %v %d %s, want 503 naming the audit log", err, held.StatusCode(), held.Body)
			}
			release()
			if got, err := s.Management.GetRemoteParticipantWithResponse(t.Context(), "held"); err != nil || got.StatusCode() != http.StatusNotFound {
				t.Fatalf("1.11 after the lock: got %v %d %s, want the refused create not done (404)", err, got.StatusCode(), got.Body)
			}

			resp, raw = do(t, s, "POST", "/api/v1/validators/v1/parties?partyIdHint=free", "", nil, true)
			if resp.StatusCode != http.StatusOK || calls.Load() != 1 {
				t.Fatalf("after the lock: got %d %s and %d calls, want 200 and 1", resp.StatusCode, raw, calls.Load())
			}
			got, err := s.App.Store.FindAudit(context.Background(), domain.AuditFilter{Page: domain.Page{Limit: 10}})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Outcome != domain.AuditDone || got[0].Status != 200 || got[0].RequestID != resp.Header.Get("X-Request-Id") {
				t.Fatalf("audit log: got %+v, want the one attempted call, done with 200", got)
			}
		})
	}
}

// TestRequestIDPattern: a client's X-Request-Id is kept (echoed and
// audited) only when it matches server.RequestIDPattern; otherwise the
// server generates one.
func TestRequestIDPattern(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	tests := []struct {
		sent string
		kept bool
	}{
		{"3f1c9d2e-8a7b-4c1d-9e2f-0a1b2c3d4e5f", true},
		{"req_0001.a:b", true},
		{strings.Repeat("a", 128), true},
		{strings.Repeat("a", 129), false},
		{"forged-id-0001 <script>", false},
		{"a/b", false},
		{"id\u200bzero-width", false},
	}
	for _, tt := range tests {
		req, err := http.NewRequest("POST", s.URL+"/api/v1/validators/v1/parties", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.Token)
		req.Header.Set("X-Request-Id", tt.sent)
		resp, err := s.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := resp.Header.Get("X-Request-Id")
		if (got == tt.sent) != tt.kept || !server.RequestIDPattern.MatchString(got) {
			t.Errorf("sent %q: answer carries %q, want kept=%v and an id matching the pattern", tt.sent, got, tt.kept)
		}
		entries, err := s.App.Store.FindAudit(context.Background(), domain.AuditFilter{Page: domain.Page{Limit: 1}})
		if err != nil || len(entries) != 1 || entries[0].RequestID != got {
			t.Errorf("sent %q: audited %+v, want request id %q", tt.sent, entries, got)
		}
	}
}
