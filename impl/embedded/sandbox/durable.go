package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
)

// WriteFile replaces a file whole, as atomicfile.Write does (the default);
// tests inject a failing one (a full or read-only disk).
type WriteFile func(path string, data []byte, perm os.FileMode) error

// durably runs handler h; when a change it reports (true) cannot be saved,
// the change is undone and answered via unavailable. Called with n.mu held.
func (n *Network) durably(w http.ResponseWriter, mutates bool, unavailable func(w http.ResponseWriter, msg string), h func(w http.ResponseWriter) bool) {
	if !mutates {
		h(w)
		return
	}
	held := httptest.NewRecorder()
	if err := n.changeLocked(func() bool { return h(held) }); err != nil {
		unavailable(w, err.Error())
		return
	}
	flush(w, held)
}

// changeLocked runs f and saves the change it reports (true) or, failing that,
// restores the state before it, so that no caller acknowledges a change a
// restart would lose. Called with n.mu held.
func (n *Network) changeLocked(f func() bool) error {
	before, err := json.Marshal(n.st)
	if err != nil {
		return fmt.Errorf("sandbox state could not be read: %v", err)
	}
	if !f() {
		return nil
	}
	err = n.saveLocked()
	if err == nil {
		return nil
	}
	n.opts.Logger.Error("sandbox: saving state failed; the change is undone", "file", n.statePath(), "error", err)
	restored := &state{}
	if rerr := json.Unmarshal(before, restored); rerr == nil {
		restored.makeMaps()
		n.st = restored
	}
	return fmt.Errorf("the sandbox state (%s) could not be saved; the change was not made", n.statePath())
}

// Ping reports whether the state can be written now: the health of the
// embedded default's sandbox store.
func (n *Network) Ping(context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.saveLocked(); err != nil {
		return fmt.Errorf("sandbox state %s cannot be written: %w", n.statePath(), err)
	}
	return nil
}

func flush(w http.ResponseWriter, held *httptest.ResponseRecorder) {
	maps.Copy(w.Header(), held.Header())
	w.WriteHeader(held.Code)
	_, _ = w.Write(held.Body.Bytes())
}
