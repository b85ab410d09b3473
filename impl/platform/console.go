package platform

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/net/http/httpguts"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/domain"
)

const partConsole = "the ledger console (a console opener: the sandbox participant's console or a pod exec)"

// ConsoleSession is one terminal session on a participant's console: Read
// is its output (io.EOF when the console ended), Write its input; Close
// makes a pending Read return.
type ConsoleSession interface {
	io.ReadWriteCloser
	Resize(cols, rows uint16) error
}

// Auditor stores audit entries (the console's one entry per session).
type Auditor interface {
	RecordAudit(ctx context.Context, e domain.AuditEntry) error
}

// ConsoleOptions is what the console is built from.
type ConsoleOptions struct {
	// Open opens a session on a validator's participant (the sandbox's
	// console, or ExecConsole.OpenConsole); nil leaves the console at 501.
	Open func(ctx context.Context, validator string) (ConsoleSession, error)
	// IdleTimeout ends a session with neither input nor output for that
	// long (default 15 minutes).
	IdleTimeout time.Duration
	// Audit gets one entry per session (never its keystrokes or output).
	Audit Auditor
}

// DefaultConsoleIdleTimeout is ConsoleOptions.IdleTimeout's default.
const DefaultConsoleIdleTimeout = 15 * time.Minute

// consoleReadLimit bounds one client frame (a paste, a resize message).
const consoleReadLimit = 64 << 10

// OpenLedgerConsole is never routed: the console is served by
// LedgerConsole, a plain handler that can take over the connection.
func (s *Server) OpenLedgerConsole(ctx context.Context, req platformapi.OpenLedgerConsoleRequestObject) (platformapi.OpenLedgerConsoleResponseObject, error) {
	return nil, notWired("openLedgerConsole", partConsole)
}

// LedgerConsole upgrades to the WebSocket console stream (openLedgerConsole),
// behind authentication and request validation like every operation; what
// can fail is answered before the upgrade, in the release's error shape.
func (s *Server) LedgerConsole(w http.ResponseWriter, r *http.Request) error {
	c := s.Console
	if c.Open == nil {
		return notWired("openLedgerConsole", partConsole)
	}
	if err := checkHandshake(r); err != nil {
		return err
	}
	validator := r.URL.Query().Get("validator")
	if _, err := s.read(Resources.ResourceObject, domain.KindValidator, validator); err != nil {
		return err
	}
	// The handler returns when the session ends.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	sess, err := c.Open(ctx, validator)
	if err != nil {
		return err
	}
	defer sess.Close()
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"bearer"}})
	if err != nil {
		// Accept has answered the handshake's error itself.
		s.Logger.LogAttrs(ctx, slog.LevelInfo, "console handshake refused", slog.String("validator", validator), slog.Any("error", err))
		return nil
	}
	conn.SetReadLimit(consoleReadLimit)
	started := time.Now()
	end := s.runConsole(ctx, conn, sess, c.IdleTimeout)
	s.auditConsole(r, w.Header().Get("X-Request-Id"), validator, started, end)
	return nil
}

// checkHandshake refuses, in the release's error shape (400), what the
// WebSocket library would refuse in plain text once the session is open.
func checkHandshake(r *http.Request) error {
	switch {
	case !httpguts.HeaderValuesContainsToken(r.Header.Values("Upgrade"), "websocket"):
		return domain.Invalid("Upgrade", "must be websocket: the console is a WebSocket stream")
	case !httpguts.HeaderValuesContainsToken(r.Header.Values("Connection"), "upgrade"):
		return domain.Invalid("Connection", "must contain Upgrade (WebSocket handshake)")
	case r.Header.Get("Sec-WebSocket-Version") != "13":
		return domain.Invalid("Sec-WebSocket-Version", "must be 13 (WebSocket handshake)")
	case r.Header.Get("Sec-WebSocket-Key") == "":
		return domain.Invalid("Sec-WebSocket-Key", "is required (WebSocket handshake)")
	}
	return nil
}

// sessionEnd is the close frame sent and the reason the audit entry records.
type sessionEnd struct {
	code   websocket.StatusCode
	reason string
}

var (
	endConsole = sessionEnd{websocket.StatusNormalClosure, "console session ended"}
	endClient  = sessionEnd{websocket.StatusNormalClosure, "client closed"}
	endIdle    = sessionEnd{websocket.StatusNormalClosure, "idle timeout"}
	endStream  = sessionEnd{websocket.StatusInternalError, "console stream failed"}
)

// runConsole pumps output to the socket and input to the session until
// either side ends, the idle timeout passes or ctx ends. The socket uses
// connCtx, which finishing does not cancel: the library drops a connection
// whose context is cancelled without sending a close frame.
func (s *Server) runConsole(connCtx context.Context, conn *websocket.Conn, sess ConsoleSession, idle time.Duration) sessionEnd {
	ctx, cancel := context.WithCancel(connCtx)
	defer cancel()
	var once sync.Once
	var end sessionEnd
	finish := func(e sessionEnd) {
		once.Do(func() { end = e; cancel() })
	}
	idleTimer := time.AfterFunc(idle, func() { finish(endIdle) })
	defer idleTimer.Stop()
	touch := func() { idleTimer.Reset(idle) }
	var wg sync.WaitGroup
	wg.Go(func() { // console → browser
		buf := make([]byte, 32<<10)
		for {
			n, err := sess.Read(buf)
			if n > 0 {
				touch()
				if werr := conn.Write(connCtx, websocket.MessageBinary, buf[:n]); werr != nil {
					finish(endClient)
					return
				}
			}
			if errors.Is(err, io.EOF) {
				finish(endConsole)
				return
			}
			if err != nil {
				if ctx.Err() == nil {
					s.Logger.LogAttrs(ctx, slog.LevelWarn, "console stream failed", slog.Any("error", err))
				}
				finish(endStream)
				return
			}
		}
	})
	wg.Go(func() { // browser → console
		for {
			typ, data, err := conn.Read(connCtx)
			if err != nil {
				finish(endClient)
				return
			}
			touch()
			if typ == websocket.MessageText {
				var m struct {
					Type string `json:"type"`
					Cols uint16 `json:"cols"`
					Rows uint16 `json:"rows"`
				}
				// Control messages other than a valid resize are ignored:
				// a terminal must not die of a client's unknown message.
				if json.Unmarshal(data, &m) == nil && m.Type == "resize" && m.Cols > 0 && m.Rows > 0 {
					_ = sess.Resize(m.Cols, m.Rows)
				}
				continue
			}
			if _, err := sess.Write(data); err != nil {
				finish(endStream)
				return
			}
		}
	})
	<-ctx.Done()
	finish(endClient) // no-op when already ended
	// Closing the session unblocks its Read; closing the socket, conn.Read.
	sess.Close()
	conn.Close(end.code, end.reason)
	wg.Wait()
	return end
}

func (s *Server) auditConsole(r *http.Request, requestID, validator string, started time.Time, end sessionEnd) {
	e := domain.AuditEntry{
		At: time.Now().UTC(), Operation: "openLedgerConsole", Validator: validator,
		Status: http.StatusSwitchingProtocols, RequestID: requestID,
		Targets: map[string]string{"ended": end.reason, "duration": time.Since(started).Round(time.Millisecond).String()},
	}
	if p, ok := auth.PrincipalFrom(r.Context()); ok {
		e.Subject = p.Subject
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	s.Logger.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("request_id", e.RequestID), slog.String("subject", e.Subject),
		slog.String("operation", e.Operation), slog.String("validator", validator), slog.Any("targets", e.Targets), slog.Int("status", e.Status))
	if s.Console.Audit == nil {
		return
	}
	if err := s.Console.Audit.RecordAudit(ctx, e); err != nil {
		s.Logger.LogAttrs(ctx, slog.LevelError, "audit entry not stored", slog.String("operation", e.Operation), slog.Any("error", err))
	}
}
