package engine

import "testing"

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
		{[]string{"--data-dir=/data/cluster2/etcd"}, false},
		{[]string{"--data-dir=/data/cluster/etcd/sub"}, false},
		{[]string{"--data-dir=/data"}, false},
	} {
		if got := namesPath(c.args, marks); got != c.want {
			t.Errorf("%v: got %v, want %v", c.args, got, c.want)
		}
	}
}
