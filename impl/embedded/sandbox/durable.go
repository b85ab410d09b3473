package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
)

// WriteFile replaces a file whole, as atomicfile.Write does (the default);
// tests inject a failing one (a full or read-only disk).
type WriteFile func(path string, data []byte, perm os.FileMode) error

// durably runs handler h; one that mutates, with its answer held back:
// when the state it changed (h returns true) cannot be saved, the change is
// undone and the caller gets 503 (via unavailable) instead of an answer for
// a change that a restart would lose. Called with n.mu held.
func (n *Network) durably(w http.ResponseWriter, mutates bool, unavailable func(w http.ResponseWriter, msg string), h func(w http.ResponseWriter) bool) {
	if !mutates {
		h(w)
		return
	}
	before, err := json.Marshal(n.st)
	if err != nil {
		unavailable(w, "sandbox state could not be read: "+err.Error())
		return
	}
	held := &heldResponse{header: http.Header{}}
	if !h(held) {
		held.flush(w)
		return
	}
	if err := n.saveLocked(); err != nil {
		n.opts.Logger.Error("sandbox: saving state failed; the change is undone", "file", n.statePath(), "error", err)
		restored := &state{}
		if rerr := json.Unmarshal(before, restored); rerr == nil {
			n.st = restored
		}
		unavailable(w, fmt.Sprintf("the sandbox state (%s) could not be saved; the change was not made", n.statePath()))
		return
	}
	held.flush(w)
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

// heldResponse buffers an answer until it may be sent.
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (h *heldResponse) Header() http.Header { return h.header }
func (h *heldResponse) WriteHeader(s int) {
	if h.status == 0 {
		h.status = s
	}
}
func (h *heldResponse) Write(b []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	return h.body.Write(b)
}

func (h *heldResponse) flush(w http.ResponseWriter) {
	for k, v := range h.header {
		w.Header()[k] = v
	}
	if h.status == 0 {
		h.status = http.StatusOK
	}
	w.WriteHeader(h.status)
	_, _ = w.Write(h.body.Bytes())
}

// Canton's category and gRPC code of a transient failure (the ledger's
// answer when it cannot persist).
const (
	catUnavailable  = 1
	grpcUnavailable = 14
)
