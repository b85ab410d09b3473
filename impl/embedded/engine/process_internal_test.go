package engine

import (
	"os"
	"strings"
	"testing"
)

func TestStaleMatchesOnlyTheDirectoryOwnPaths(t *testing.T) {
	marks := stalePaths("/data/cluster")
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--data-dir=/data/cluster/etcd"}, true},
		{[]string{"--data-dir", "/data/cluster/etcd"}, true},
		{[]string{"--cert-dir=/data/cluster/pki"}, true},
		{[]string{"--kubeconfig=/data/cluster/controller-manager.kubeconfig"}, true},
		{[]string{"nodesim", "--kubeconfig=/data/cluster/node.kubeconfig"}, true},
		{[]string{"--data-dir=/data/cluster2/etcd"}, false},
		{[]string{"--data-dir=/data/cluster/etcd/sub"}, false},
		{[]string{"--data-dir=/data"}, false},
	} {
		if got := namesPath(c.args, marks); got != c.want {
			t.Errorf("%v: got %v, want %v", c.args, got, c.want)
		}
	}
}

// TestOutputKeepsLastLinesWhenTheLogFails: a child's output is accepted
// whole even when its log file cannot be written (a full disk: the child
// must not see EPIPE), and its last lines say why it exited.
func TestOutputKeepsLastLinesWhenTheLogFails(t *testing.T) {
	f, err := os.Open(os.DevNull) // read-only: every write fails
	if err != nil {
		t.Fatal(err)
	}
	o := &output{file: f}
	defer o.close()
	for i := range 2000 {
		line := []byte(strings.Repeat("x", i%50) + "\n")
		if n, err := o.Write(line); n != len(line) || err != nil {
			t.Fatalf("write: %d, %v", n, err)
		}
	}
	if _, err := o.Write([]byte(`{"level":"fatal","msg":"failed to save","error":"write: no space left on device"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	last := o.lastLines(3)
	if len(last) != 3 || !strings.Contains(last[2], "no space left on device") {
		t.Fatalf("last lines: %q", last)
	}
	if len(o.tail) > tailBytes {
		t.Errorf("tail holds %d bytes, want at most %d", len(o.tail), tailBytes)
	}
}
