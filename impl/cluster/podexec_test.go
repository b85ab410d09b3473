package cluster

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// Exec itself needs a kubelet (envtest has none); these tests cover what
// surrounds it: finding the pod, the commands, the URL and md5sum's output.

func TestValidatorAppSelector(t *testing.T) {
	if got, want := ValidatorAppSelector("acme"), "validator-manager.io/validator=acme,app.kubernetes.io/component=validator-app"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestPodExecFind(t *testing.T) {
	pod := func(name, validator string, phase corev1.PodPhase, containers ...string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{ValidatorLabel: validator, ComponentLabel: ValidatorAppName}},
			Status:     corev1.PodStatus{Phase: phase},
		}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
		}
		return p
	}
	terminating := pod("acme-2", "acme", corev1.PodRunning, "validator-app")
	terminating.DeletionTimestamp = &metav1.Time{}
	terminating.Finalizers = []string{"x"}
	annotated := pod("acme-1", "acme", corev1.PodRunning, "sidecar", "validator-app", "app")
	annotated.Annotations = map[string]string{defaultContainerAnno: "app"}
	otherNS := pod("acme-9", "acme", corev1.PodRunning, "validator-app")
	otherNS.Namespace = "elsewhere"
	wallet := pod("acme-wallet", "acme", corev1.PodRunning, "wallet")
	wallet.Labels[ComponentLabel] = "wallet-web-ui"

	cases := []struct {
		name          string
		objects       []runtime.Object
		podFlag       string
		wantPod       string
		wantContainer string
		wantErr       error
		wantMsg       string
	}{
		{name: "the running pod", objects: []runtime.Object{pod("acme-1", "acme", corev1.PodRunning, "validator-app"), pod("acme-0", "acme", corev1.PodPending, "validator-app"), terminating, otherNS, wallet, pod("acme-two-1", "acme-two", corev1.PodRunning, "validator-app")},
			wantPod: "acme-1", wantContainer: "validator-app"},
		{name: "the only container", objects: []runtime.Object{pod("acme-1", "acme", corev1.PodRunning, "main")}, wantPod: "acme-1", wantContainer: "main"},
		{name: "the validator-app container", objects: []runtime.Object{pod("acme-1", "acme", corev1.PodRunning, "istio-proxy", "validator-app")}, wantPod: "acme-1", wantContainer: "validator-app"},
		{name: "the default container annotation", objects: []runtime.Object{annotated}, wantPod: "acme-1", wantContainer: "app"},
		{name: "no container to pick", objects: []runtime.Object{pod("acme-1", "acme", corev1.PodRunning, "a", "b")}, wantErr: domain.ErrConflict, wantMsg: "has containers a, b"},
		{name: "no pod", objects: []runtime.Object{pod("acme-two-1", "acme-two", corev1.PodRunning, "validator-app"), otherNS}, wantErr: domain.ErrNotFound, wantMsg: `no running pod of validator "acme" in namespace "ns"`},
		{name: "no running pod", objects: []runtime.Object{pod("acme-0", "acme", corev1.PodFailed, "validator-app"), terminating}, wantErr: domain.ErrNotFound, wantMsg: "no running pod"},
		{name: "two running pods", objects: []runtime.Object{pod("acme-b", "acme", corev1.PodRunning, "validator-app"), pod("acme-a", "acme", corev1.PodRunning, "validator-app")},
			wantErr: domain.ErrConflict, wantMsg: "2 running pods of validator \"acme\" (acme-a, acme-b)"},
		{name: "named pod", podFlag: "custom", objects: []runtime.Object{pod("custom", "", corev1.PodRunning, "validator-app"), pod("acme-1", "acme", corev1.PodRunning, "validator-app")},
			wantPod: "custom", wantContainer: "validator-app"},
		{name: "named pod not running", podFlag: "acme-0", objects: []runtime.Object{pod("acme-0", "acme", corev1.PodPending, "validator-app")}, wantErr: domain.ErrUnavailable, wantMsg: `pod "acme-0" is pending, not running`},
		{name: "named pod missing", podFlag: "nope", wantErr: domain.ErrNotFound, wantMsg: `pod "nope" does not exist`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := NewPodExec(&rest.Config{}, kubefake.NewClientset(tc.objects...), "ns")
			e.Pod = tc.podFlag
			pod, container, err := e.Find(context.Background(), "acme")
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("got error %v, want %v containing %q", err, tc.wantErr, tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want none", err)
			}
			if pod != tc.wantPod || container != tc.wantContainer {
				t.Errorf("got %s/%s, want %s/%s", pod, container, tc.wantPod, tc.wantContainer)
			}
		})
	}
}

// TestPodExecCheckExec: a pod on a simulated node is refused before any
// exec; what cannot be read is left to the exec.
func TestPodExecCheckExec(t *testing.T) {
	pod := func(node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "acme-1", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: node}}
	}
	node := func(name string, labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	cases := []struct {
		name    string
		objects []runtime.Object
		wantMsg string // "" means no error
	}{
		{name: "simulated node", objects: []runtime.Object{pod("embedded-node"), node("embedded-node", map[string]string{SimulatedNodeLabel: "true"})},
			wantMsg: `pod "acme-1" runs on node "embedded-node", which is simulated`},
		{name: "real node", objects: []runtime.Object{pod("worker-1"), node("worker-1", map[string]string{"kubernetes.io/hostname": "worker-1"})}},
		{name: "label false", objects: []runtime.Object{pod("worker-1"), node("worker-1", map[string]string{SimulatedNodeLabel: "false"})}},
		{name: "node not readable", objects: []runtime.Object{pod("worker-1")}},
		{name: "pod not scheduled", objects: []runtime.Object{pod("")}},
		{name: "pod gone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := NewPodExec(&rest.Config{}, kubefake.NewClientset(tc.objects...), "ns").CheckExec(context.Background(), "acme-1")
			if tc.wantMsg == "" && err != nil {
				t.Fatalf("got %v, want no error", err)
			}
			if tc.wantMsg != "" && (err == nil || !strings.Contains(err.Error(), tc.wantMsg)) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantMsg)
			}
		})
	}
}

func TestExecURL(t *testing.T) {
	e := NewPodExec(&rest.Config{Host: "https://k8s.example:6443"}, kubefake.NewClientset(), "ns")
	cases := []struct {
		name    string
		command []string
		stdin   bool
		want    map[string][]string
	}{
		{"copy", copyCommand("/domain-upgrade-dump/domain_migration_dump.json"), true, map[string][]string{
			"command":   {"sh", "-c", `mkdir -p "$(dirname "$1")" && cat > "$1"`, "sh", "/domain-upgrade-dump/domain_migration_dump.json"},
			"container": {"validator-app"}, "stdin": {"true"}, "stdout": {"true"}, "stderr": {"true"}}},
		{"md5", md5Command("/domain-upgrade-dump/domain_migration_dump.json"), false, map[string][]string{
			"command":   {"md5sum", "/domain-upgrade-dump/domain_migration_dump.json"},
			"container": {"validator-app"}, "stdout": {"true"}, "stderr": {"true"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := e.execURL("acme-1", "validator-app", tc.command, tc.stdin)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := u.Scheme+"://"+u.Host+u.Path, "https://k8s.example:6443/api/v1/namespaces/ns/pods/acme-1/exec"; got != want {
				t.Errorf("got %s, want %s", got, want)
			}
			if got := map[string][]string(u.Query()); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("query: got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCopyCommand runs the copy command with a local sh: it creates the
// directory, writes stdin as is, and takes the path as data, not shell text.
func TestCopyCommand(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh on this machine")
	}
	dir := t.TempDir()
	content := "{\"acs_snapshot\":\"QUJD\"}\n\x00binary\xff"
	for _, name := range []string{"domain-upgrade-dump/domain_migration_dump.json", "with space/$(touch injected)/dump.json"} {
		path := filepath.Join(dir, name)
		cmd := copyCommand(path)
		c := exec.Command(cmd[0], cmd[1:]...)
		c.Dir = dir
		c.Stdin = strings.NewReader(content)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", name, err, out)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Errorf("%s: got %q (%v), want %q", name, got, err, content)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "injected")); err == nil {
		t.Error("the path was run as shell text")
	}
}

func TestParseMD5(t *testing.T) {
	cases := []struct {
		name, out, want, wantErr string
	}{
		{name: "GNU", out: "d41d8cd98f00b204e9800998ecf8427e  /domain-upgrade-dump/domain_migration_dump.json\n", want: "d41d8cd98f00b204e9800998ecf8427e"},
		{name: "BusyBox", out: "D41D8CD98F00B204E9800998ECF8427E  /x\n", want: "d41d8cd98f00b204e9800998ecf8427e"},
		{name: "escaped name", out: `\d41d8cd98f00b204e9800998ecf8427e  /a\\b` + "\n", want: "d41d8cd98f00b204e9800998ecf8427e"},
		{name: "empty", out: "", wantErr: "printed nothing"},
		{name: "not a sum", out: "md5sum: can't open '/x': No such file or directory\n", wantErr: "not a checksum"},
		{name: "short", out: "d41d8cd98f  /x\n", wantErr: "not a checksum"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMD5(tc.out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("got %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	// The real md5sum, as the pod runs it.
	if _, err := exec.LookPath("md5sum"); err == nil {
		path := filepath.Join(t.TempDir(), "dump.json")
		content := []byte(`{"a":1}`)
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := md5Command(path)
		out, err := exec.Command(cmd[0], cmd[1:]...).Output()
		if err != nil {
			t.Fatal(err)
		}
		sum := md5.Sum(content)
		if got, err := parseMD5(string(out)); err != nil || got != hex.EncodeToString(sum[:]) {
			t.Errorf("md5sum: got %q, %v; want %x", got, err, sum)
		}
	}
}

func TestExecBuffer(t *testing.T) {
	b := &execBuffer{max: 5}
	for _, s := range []string{"abc", "defgh", "ij"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Errorf("Write(%q): got %d, %v; want %d, nil", s, n, err, len(s))
		}
	}
	if got := b.String(); got != "abcde" {
		t.Errorf("got %q, want %q", got, "abcde")
	}
}
