package sandbox

import (
	"errors"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/validator-manager/validator-manager/impl/atomicfile"
)

// TestAdminChangeIsDurable: an admin API change whose state cannot be saved
// is undone and answered UNAVAILABLE, as the JSON APIs' are; one that is
// saved stays, on disk too.
func TestAdminChangeIsDurable(t *testing.T) {
	var failing atomic.Bool
	n, err := Open(t.TempDir(), Options{WriteFile: func(name string, data []byte, perm os.FileMode) error {
		if failing.Load() {
			return errors.New("no space left on device")
		}
		return atomicfile.Write(name, data, perm)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.node("v1"); err != nil {
		t.Fatal(err)
	}
	a := &admin{n: n, name: "v1"}
	add := func(pkg string) error {
		return a.locked(true, func(ns *nodeState) (bool, error) {
			ns.Packages = append(ns.Packages, pkg)
			return true, nil
		})
	}
	packages := func() []string {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.st.Nodes["v1"].Packages
	}

	failing.Store(true)
	err = add("lost")
	if st := status.Convert(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "the change was not made") {
		t.Fatalf("change while the state cannot be saved: got %v, want UNAVAILABLE saying the change was not made", err)
	}
	if slices.Contains(packages(), "lost") {
		t.Fatal("the change that could not be saved is still in the state")
	}
	n.mu.Lock()
	hosting, spent := n.st.Hosting, n.st.UsedMultiHashes
	n.mu.Unlock()
	if hosting == nil || spent == nil {
		t.Fatal("the undo left the state's empty maps nil (the file leaves them out): the next external party's allocate would panic writing them")
	}

	if _, err := n.node("v2"); err == nil {
		t.Fatal("a node whose state cannot be saved was made")
	}
	n.mu.Lock()
	_, phantom := n.st.Nodes["v2"]
	n.mu.Unlock()
	if phantom {
		t.Fatal("a node whose state could not be saved is still in the state: the next save would write it")
	}

	failing.Store(false)
	if err := add("kept"); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(n.statePath())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(packages(), "kept") || !strings.Contains(string(raw), `"kept"`) || strings.Contains(string(raw), `"lost"`) {
		t.Fatalf("after a saved change: packages %v, state on disk %s; want kept and not lost", packages(), raw)
	}
}
