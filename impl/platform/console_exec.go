package platform

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// ExecConsole opens console sessions in a cluster: an exec session with a
// TTY in the running participant pod of the validator, through client-go's
// remotecommand (WebSocket, with SPDY as fallback, as kubectl does).
type ExecConsole struct {
	Core      kubernetes.Interface
	Config    *rest.Config
	Namespace string
	// NewExecutor builds the stream to an exec URL (default: WebSocket with
	// SPDY fallback); tests put a fake executor here.
	NewExecutor func(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error)
}

// DefaultConsoleCommand starts Canton's console against the pod's
// participant (the image's entry point and remote console configuration).
var DefaultConsoleCommand = []string{"/app/bin/canton", "--console", "-c", "/app/remote-participant.conf"}

// OpenConsole finds the participant pod and starts the exec session. The
// session lives until Close or until the command ends.
func (e *ExecConsole) OpenConsole(ctx context.Context, validator string) (ConsoleSession, error) {
	pod, container, err := e.find(ctx, validator)
	if err != nil {
		return nil, err
	}
	u, err := cluster.ExecURL(e.Config, e.Namespace, pod, &corev1.PodExecOptions{Container: container, Command: DefaultConsoleCommand, Stdin: true, Stdout: true, TTY: true})
	if err != nil {
		return nil, fmt.Errorf("console: API server address %q: %w", e.Config.Host, err)
	}
	newExec := e.NewExecutor
	if newExec == nil {
		newExec = cluster.NewExecutor
	}
	ex, err := newExec(e.Config, u)
	if err != nil {
		return nil, fmt.Errorf("console exec into pod %s: %w", pod, err)
	}
	return startExec(ex), nil
}

// find is the validator's one running participant pod and its container:
// the pod's kubectl.kubernetes.io/default-container, else "participant",
// else the only container.
func (e *ExecConsole) find(ctx context.Context, validator string) (string, string, error) {
	sel := "validator-manager.io/validator=" + validator + ",app.kubernetes.io/component=participant"
	pods, err := e.Core.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return "", "", domain.Unavailable("console: participant pods of %s cannot be listed: %v", validator, err)
	}
	running := slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return !cluster.PodRunning(&p) })
	if len(running) != 1 {
		return "", "", domain.Unavailable("console: %d running participant pods of %s (selector %s), want one", len(running), validator, sel)
	}
	p := running[0]
	if c := p.Annotations["kubectl.kubernetes.io/default-container"]; c != "" {
		return p.Name, c, nil
	}
	for _, c := range p.Spec.Containers {
		if c.Name == "participant" {
			return p.Name, c.Name, nil
		}
	}
	if len(p.Spec.Containers) == 1 {
		return p.Name, p.Spec.Containers[0].Name, nil
	}
	return "", "", domain.Unavailable("console: pod %s has several containers and none is named participant", p.Name)
}

// execSession is a running exec stream seen as a ConsoleSession.
type execSession struct {
	cancel  context.CancelFunc
	stdinW  *io.PipeWriter
	stdoutR *io.PipeReader
	sizes   chan remotecommand.TerminalSize
	done    <-chan struct{}
	ctx     context.Context
}

func startExec(ex remotecommand.Executor) *execSession {
	// The stream's context is its own: it ends with Close, not with the
	// request that opened it.
	ctx, cancel := context.WithCancel(context.Background())
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	done := make(chan struct{})
	s := &execSession{cancel: cancel, stdinW: stdinW, stdoutR: stdoutR, sizes: make(chan remotecommand.TerminalSize, 1), done: done, ctx: ctx}
	go func() {
		defer close(done)
		err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdinR, Stdout: stdoutW, Tty: true, TerminalSizeQueue: s})
		// nil: the command ended, and Read answers io.EOF.
		stdoutW.CloseWithError(err)
		stdinR.Close()
	}()
	return s
}

func (s *execSession) Read(p []byte) (int, error)  { return s.stdoutR.Read(p) }
func (s *execSession) Write(p []byte) (int, error) { return s.stdinW.Write(p) }

// Resize keeps the newest size only: a terminal being dragged sends many.
func (s *execSession) Resize(cols, rows uint16) error {
	size := remotecommand.TerminalSize{Width: cols, Height: rows}
	for {
		select {
		case s.sizes <- size:
			return nil
		default:
		}
		select {
		case <-s.sizes:
		default:
		}
	}
}

// Next is remotecommand's TerminalSizeQueue: nil ends the size stream.
func (s *execSession) Next() *remotecommand.TerminalSize {
	select {
	case size := <-s.sizes:
		return &size
	case <-s.ctx.Done():
		return nil
	}
}

func (s *execSession) Close() error {
	// Each of these may be called again: a second Close only waits.
	s.cancel()
	s.stdinW.Close()
	s.stdoutR.Close()
	<-s.done
	return nil
}
