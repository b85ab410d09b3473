package platform_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/platform"
)

// fakeExec is a pod's exec stream: it answers each input line with
// "out: <line>", records terminal sizes and ends on "exit".
type fakeExec struct {
	url   *url.URL
	mu    sync.Mutex
	sizes []remotecommand.TerminalSize
	opts  remotecommand.StreamOptions
}

func (f *fakeExec) Stream(o remotecommand.StreamOptions) error {
	return f.StreamWithContext(context.Background(), o)
}

func (f *fakeExec) StreamWithContext(ctx context.Context, o remotecommand.StreamOptions) error {
	f.opts = o
	go func() {
		for {
			size := o.TerminalSizeQueue.Next()
			if size == nil {
				return
			}
			f.mu.Lock()
			f.sizes = append(f.sizes, *size)
			f.mu.Unlock()
		}
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(o.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case l, ok := <-lines:
			if !ok || l == "exit" {
				return nil
			}
			if l == "fail" {
				return errors.New("stream reset")
			}
			if _, err := io.WriteString(o.Stdout, "out: "+l+"\r\n"); err != nil {
				return err
			}
		}
	}
}

func pod(name, validator string, phase corev1.PodPhase, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{
		"validator-manager.io/validator": validator, "app.kubernetes.io/component": "participant"}},
		Status: corev1.PodStatus{Phase: phase}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
	}
	return p
}

func TestExecConsole(t *testing.T) {
	t.Parallel()
	core := fake.NewClientset(
		pod("v1-participant-0", "v1", corev1.PodRunning, "participant", "sidecar"),
		pod("v2-participant-0", "v2", corev1.PodPending, "participant"),
		pod("v3-a", "v3", corev1.PodRunning, "participant"), pod("v3-b", "v3", corev1.PodRunning, "participant"),
	)
	var last *fakeExec
	e := &platform.ExecConsole{Core: core, Namespace: "ns", Config: &rest.Config{Host: "https://api.test:6443"},
		NewExecutor: func(_ *rest.Config, u *url.URL) (remotecommand.Executor, error) {
			last = &fakeExec{url: u}
			return last, nil
		}}
	ctx := t.Context()

	t.Run("no single running pod", func(t *testing.T) {
		for _, v := range []string{"v2", "v3", "v4"} {
			if _, err := e.OpenConsole(ctx, v); !errors.Is(err, domain.ErrUnavailable) {
				t.Fatalf("%s: %v, want unavailable", v, err)
			}
		}
	})

	t.Run("stdin, stdout, resize, end", func(t *testing.T) {
		s, err := e.OpenConsole(ctx, "v1")
		if err != nil {
			t.Fatal(err)
		}
		q := last.url.Query()
		if last.url.Path != "/api/v1/namespaces/ns/pods/v1-participant-0/exec" || q.Get("container") != "participant" || q.Get("tty") != "true" ||
			q.Get("stdin") != "true" || q.Get("stdout") != "true" || strings.Join(q["command"], " ") != strings.Join(platform.DefaultConsoleCommand, " ") {
			t.Fatalf("exec URL %s", last.url)
		}
		if err := s.Resize(100, 30); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write([]byte("participant.id\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 100)
		n, err := s.Read(buf)
		if err != nil || string(buf[:n]) != "out: participant.id\r\n" {
			t.Fatalf("read %q %v", buf[:n], err)
		}
		if !last.opts.Tty || last.opts.Stderr != nil {
			t.Fatalf("stream options: tty %v, stderr %v (a TTY merges them)", last.opts.Tty, last.opts.Stderr)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			last.mu.Lock()
			got := append([]remotecommand.TerminalSize(nil), last.sizes...)
			last.mu.Unlock()
			if len(got) == 1 && got[0] == (remotecommand.TerminalSize{Width: 100, Height: 30}) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sizes %v", got)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := s.Write([]byte("exit\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Read(buf); !errors.Is(err, io.EOF) {
			t.Fatalf("read after the command ended: %v, want EOF", err)
		}
		s.Close()
	})

	t.Run("stream failure", func(t *testing.T) {
		s, err := e.OpenConsole(ctx, "v1")
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		s.Write([]byte("fail\n"))
		if _, err := s.Read(make([]byte, 10)); err == nil || errors.Is(err, io.EOF) {
			t.Fatalf("read after a failed stream: %v, want the stream's error", err)
		}
	})

	t.Run("closed by the client", func(t *testing.T) {
		s, err := e.OpenConsole(ctx, "v1")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := s.Read(make([]byte, 10)); done <- err }()
		s.Close()
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("read after close succeeded")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not end the session")
		}
	})
}
