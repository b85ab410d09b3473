package platform_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// cdp is a minimal Chrome DevTools Protocol client: commands in, results
// out, events ignored.
type cdp struct {
	conn *websocket.Conn
	next atomic.Int64
}

func (c *cdp) call(ctx context.Context, session, method string, params any, result any) error {
	id := c.next.Add(1)
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	raw, _ := json.Marshal(msg)
	if err := c.conn.Write(ctx, websocket.MessageText, raw); err != nil {
		return err
	}
	for {
		_, b, err := c.conn.Read(ctx)
		if err != nil {
			return err
		}
		var resp struct {
			ID     int64           `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &resp) != nil || resp.ID != id {
			continue // an event, or another call's answer
		}
		if resp.Error != nil {
			return fmt.Errorf("%s: %s", method, resp.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(resp.Result, result)
		}
		return nil
	}
}

// eval evaluates a JavaScript expression in the page, returning its value as a string.
func (c *cdp) eval(ctx context.Context, session, expr string) (string, error) {
	var out struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := c.call(ctx, session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &out); err != nil {
		return "", err
	}
	if out.ExceptionDetails != nil {
		return "", fmt.Errorf("%s: %s", expr, out.ExceptionDetails.Text)
	}
	if out.Result.Value == nil {
		return "", nil
	}
	return fmt.Sprint(out.Result.Value), nil
}

// waitFor polls expr until it satisfies ok.
func (c *cdp) waitFor(t *testing.T, ctx context.Context, session, expr string, ok func(string) bool) string {
	t.Helper()
	var last string
	for ctx.Err() == nil {
		v, err := c.eval(ctx, session, expr)
		if err == nil && ok(v) {
			return v
		}
		last = fmt.Sprint(v, err)
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: last %q", expr, last)
	return ""
}

// startChromium runs headless Chromium with the DevTools protocol on a
// loopback port and connects to it.
func startChromium(t *testing.T, ctx context.Context) *cdp {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs it")
		}
		t.Skip("chromium is not installed (apt-get install chromium): skipping the browser test")
	}
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--user-data-dir="+t.TempDir(), "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	listening := regexp.MustCompile(`DevTools listening on (ws://\S+)`)
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var wsURL string
	select {
	case wsURL = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("chromium did not start its DevTools endpoint")
	}
	conn, _, err := websocket.Dial(ctx, wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(64 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &cdp{conn: conn}
}

// open opens url in a new tab and attaches to it.
func (c *cdp) open(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := c.call(ctx, "", "Target.createTarget", map[string]any{"url": url}, &target); err != nil {
		t.Fatal(err)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		t.Fatal(err)
	}
	return att.SessionID
}

// TestLedgerConsoleInBrowser opens the console page in headless Chromium
// with a token, types a command into the terminal and reads its output
// from the terminal's screen; it also follows the documentation page's link.
func TestLedgerConsoleInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	s := startConsole(t, time.Minute)
	c := startChromium(t, ctx)

	t.Run("docs page links the console", func(t *testing.T) {
		sess := c.open(t, ctx, s.URL+"/docs-ui.html")
		href := c.waitFor(t, ctx, sess, `(document.getElementById("ledger-console-link")||{}).href`, func(v string) bool { return v != "" })
		if !strings.HasSuffix(href, "/docs-ui/console.html") {
			t.Fatalf("link %q", href)
		}
	})

	t.Run("type a command, read its output", func(t *testing.T) {
		sess := c.open(t, ctx, s.URL+"/docs-ui/console.html?validator="+validator+"#token="+s.Token)
		c.waitFor(t, ctx, sess, `document.getElementById("status").dataset.state`, func(v string) bool { return v == "open" })
		screen := `(() => { const b = ledgerConsole.term.buffer.active; const out = [];
			for (let i = 0; i < b.length; i++) out.push(b.getLine(i).translateToString(true)); return out.join("\n"); })()`
		c.waitFor(t, ctx, sess, screen, func(v string) bool { return strings.Contains(v, "@ ") })
		if _, err := c.eval(ctx, sess, "ledgerConsole.term.focus()"); err != nil {
			t.Fatal(err)
		}
		if err := c.call(ctx, sess, "Input.insertText", map[string]any{"text": "participant.id"}, nil); err != nil {
			t.Fatal(err)
		}
		for _, typ := range []string{"keyDown", "keyUp"} {
			ev := map[string]any{"type": typ, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13}
			if typ == "keyDown" {
				ev["text"] = "\r"
			}
			if err := c.call(ctx, sess, "Input.dispatchKeyEvent", ev, nil); err != nil {
				t.Fatal(err)
			}
		}
		out := c.waitFor(t, ctx, sess, screen, func(v string) bool {
			return strings.Contains(v, "ParticipantId = PAR::participant-"+validator+"::1220")
		})
		if !strings.Contains(out, "@ participant.id") {
			t.Fatalf("the typed command is not echoed: %q", out)
		}
		// The token was taken out of the address bar.
		if loc, _ := c.eval(ctx, sess, "location.href"); strings.Contains(loc, s.Token) {
			t.Fatalf("token left in the address: %s", loc)
		}
	})
}
