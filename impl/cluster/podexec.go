package cluster

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// Labels that find a validator's validator app pod (with ValidatorLabel).
const (
	ComponentLabel       = "app.kubernetes.io/component"
	ValidatorAppName     = "validator-app"
	defaultContainerAnno = "kubectl.kubernetes.io/default-container"
)

// maxExecOutput bounds what an exec's stdout and stderr keep.
const maxExecOutput = 4 << 10

// ValidatorAppSelector selects the pods of validator's validator app.
func ValidatorAppSelector(validator string) string {
	return ValidatorLabel + "=" + validator + "," + ComponentLabel + "=" + ValidatorAppName
}

// PodExec is the recovery procedure's gateway into the validator app's pod
// (impl/recovery.Pods). Exec needs a kubelet: only the pure parts are tested.
type PodExec struct {
	cfg       *rest.Config
	core      kubernetes.Interface
	namespace string
	// Pod, when set, is the pod Find returns: the operator named it.
	Pod string
}

// NewPodExec works in namespace, on the pods ValidatorAppSelector selects.
func NewPodExec(cfg *rest.Config, core kubernetes.Interface, namespace string) *PodExec {
	return &PodExec{cfg: cfg, core: core, namespace: namespace}
}

// Find returns the one running pod of the validator app and its container.
func (e *PodExec) Find(ctx context.Context, validator string) (string, string, error) {
	if e.Pod != "" {
		pod, err := e.core.CoreV1().Pods(e.namespace).Get(ctx, e.Pod, metav1.GetOptions{})
		if err != nil {
			return "", "", translate(fmt.Sprintf("get pod %q", e.Pod), err)
		}
		if !PodRunning(pod) {
			return "", "", domain.Unavailable("cluster: pod %q is %s, not running", pod.Name, podState(pod))
		}
		c, err := podContainer(pod)
		return pod.Name, c, err
	}
	sel := ValidatorAppSelector(validator)
	list, err := e.core.CoreV1().Pods(e.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return "", "", translate("list pods", err)
	}
	var names []string
	var found *corev1.Pod
	for i := range list.Items {
		if PodRunning(&list.Items[i]) {
			found = &list.Items[i]
			names = append(names, found.Name)
		}
	}
	switch len(names) {
	case 0:
		return "", "", domain.NotFound("cluster: no running pod of validator %q in namespace %q (selector %s)", validator, e.namespace, sel)
	case 1:
		c, err := podContainer(found)
		return found.Name, c, err
	}
	slices.Sort(names)
	return "", "", domain.Conflict("cluster: %d running pods of validator %q (%s); name the one to use", len(names), validator, strings.Join(names, ", "))
}

// SimulatedNodeLabel marks a node without a kubelet (impl/embedded/nodesim's).
const SimulatedNodeLabel = "node.kubernetes.io/simulated"

// CheckExec tells, before anything changes, that commands cannot run in
// pod on a simulated node; what it cannot read it leaves to the exec.
func (e *PodExec) CheckExec(ctx context.Context, pod string) error {
	p, err := e.core.CoreV1().Pods(e.namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil || p.Spec.NodeName == "" {
		return nil
	}
	node, err := e.core.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
	if err != nil || node.Labels[SimulatedNodeLabel] != "true" {
		return nil
	}
	return fmt.Errorf("cluster: pod %q runs on node %q, which is simulated (%s=true, the embedded default's): it has no kubelet, so no command runs in the pod and no file can be copied into it", pod, node.Name, SimulatedNodeLabel)
}

// Copy streams r into path in the container, creating path's directory.
func (e *PodExec) Copy(ctx context.Context, pod, container, path string, r io.Reader) error {
	_, err := e.exec(ctx, pod, container, copyCommand(path), r)
	return err
}

// MD5 is the hex MD5 of path in the container (md5sum).
func (e *PodExec) MD5(ctx context.Context, pod, container, path string) (string, error) {
	out, err := e.exec(ctx, pod, container, md5Command(path), nil)
	if err != nil {
		return "", err
	}
	return parseMD5(out)
}

// copyCommand writes stdin to $1; the path is an argument, never shell text.
func copyCommand(path string) []string {
	return []string{"sh", "-c", `mkdir -p "$(dirname "$1")" && cat > "$1"`, "sh", path}
}

func md5Command(path string) []string { return []string{"md5sum", path} }

// parseMD5 reads md5sum's "<hex>  <path>" (GNU and BusyBox; GNU prefixes a
// backslash when it escapes the name).
func parseMD5(out string) (string, error) {
	fields := strings.Fields(out)
	if len(fields) == 0 {
		return "", errors.New("cluster: md5sum printed nothing")
	}
	sum := strings.ToLower(strings.TrimPrefix(fields[0], `\`))
	if len(sum) != 32 || strings.Trim(sum, "0123456789abcdef") != "" {
		return "", fmt.Errorf("cluster: md5sum printed %q, not a checksum", truncateOutput(out, 100))
	}
	return sum, nil
}

// exec runs command in the container; it returns the start of stdout.
func (e *PodExec) exec(ctx context.Context, pod, container string, command []string, stdin io.Reader) (string, error) {
	u, err := e.execURL(pod, container, command, stdin != nil)
	if err != nil {
		return "", fmt.Errorf("cluster: exec: %w", err)
	}
	ex, err := NewExecutor(e.cfg, u)
	if err != nil {
		return "", fmt.Errorf("cluster: exec: %w", err)
	}
	stdout, stderr := &execBuffer{max: maxExecOutput}, &execBuffer{max: maxExecOutput}
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
	if err != nil {
		msg := fmt.Sprintf("cluster: %s in pod %q: %v", command[0], pod, err)
		if s := strings.TrimSpace(stderr.String()); s != "" {
			msg += ": " + truncateOutput(s, 300)
		}
		return "", errors.New(msg)
	}
	return stdout.String(), nil
}

// NewExecutor streams to exec URL u over WebSocket, else SPDY, as kubectl does.
func NewExecutor(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// execURL is the pod's exec subresource with the command as parameters.
func (e *PodExec) execURL(pod, container string, command []string, stdin bool) (*url.URL, error) {
	return ExecURL(e.cfg, e.namespace, pod, &corev1.PodExecOptions{Container: container, Command: command, Stdin: stdin, Stdout: true, Stderr: true})
}

// ExecURL is the exec subresource of the pod on cfg's API server, with opts as parameters.
func ExecURL(cfg *rest.Config, namespace, pod string, opts *corev1.PodExecOptions) (*url.URL, error) {
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, err
	}
	q, err := scheme.ParameterCodec.EncodeParameters(opts, corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	u.Path = path.Join(u.Path, "/api/v1/namespaces", namespace, "pods", pod, "exec")
	u.RawQuery = q.Encode()
	return u, nil
}

// PodRunning tells whether pod runs and is not being deleted.
func PodRunning(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil
}

func podState(pod *corev1.Pod) string {
	if pod.DeletionTimestamp != nil {
		return "terminating"
	}
	return strings.ToLower(string(cmp.Or(pod.Status.Phase, corev1.PodPending)))
}

// podContainer is the one the default-container annotation names, else
// validator-app, else the only one.
func podContainer(pod *corev1.Pod) (string, error) {
	names := make([]string, len(pod.Spec.Containers))
	for i, c := range pod.Spec.Containers {
		names[i] = c.Name
	}
	if want := pod.Annotations[defaultContainerAnno]; want != "" && slices.Contains(names, want) {
		return want, nil
	}
	if slices.Contains(names, ValidatorAppName) {
		return ValidatorAppName, nil
	}
	if len(names) == 1 {
		return names[0], nil
	}
	return "", domain.Conflict("cluster: pod %q has containers %s and none is named %s", pod.Name, strings.Join(names, ", "), ValidatorAppName)
}

func truncateOutput(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// execBuffer keeps the first max bytes written: a chatty command cannot fill memory.
type execBuffer struct {
	bytes.Buffer
	max int
}

func (b *execBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
