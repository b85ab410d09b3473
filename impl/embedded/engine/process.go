package engine

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// spawner forks the children from one goroutine locked to its OS thread
// until it is closed: the parent-death signal follows the forking thread,
// which Go could otherwise retire.
type spawner chan func()

func newSpawner() spawner {
	s := make(spawner)
	go func() {
		// Never unlocked: the thread exits with the goroutine.
		runtime.LockOSThread()
		for start := range s {
			start()
		}
	}()
	return s
}

func (s spawner) start(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	done := make(chan error, 1)
	s <- func() { done <- cmd.Start() }
	return <-done
}

// child is one running binary; its stdout and stderr go to <Dir>/logs/<name>.log.
type child struct {
	name    string
	cmd     *exec.Cmd
	started time.Time
	out     *output
	done    chan struct{} // closed when it has exited
	err     error         // its exit status, set before done closes
}

// startChild starts p's binary as p's current run; a restart (appendLog)
// keeps the log of the run that exited, which holds why it did.
func (e *Engine) startChild(p *proc, appendLog bool) (*child, error) {
	name := p.name
	logFile := filepath.Join(e.opts.Dir, "logs", name+".log")
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if !appendLog {
		// Keep the previous run's log beside the new one.
		if _, err := os.Stat(logFile); err == nil {
			_ = os.Rename(logFile, logFile+".1")
		}
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(logFile, flags, 0o600)
	if err != nil && !appendLog {
		return nil, err
	}
	// A restart on a full disk runs without its log file rather than not at all.
	out := &output{file: f}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = e.opts.Dir
	cmd.Env = childEnv()
	if err := e.spawn.start(cmd); err != nil {
		out.close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, started: time.Now(), out: out, done: make(chan struct{})}
	p.mu.Lock()
	p.cur = c
	p.mu.Unlock()
	go func() {
		c.err = cmd.Wait()
		out.close()
		close(c.done)
	}()
	e.log.Debug("engine: started", "process", name, "pid", cmd.Process.Pid, "log", logFile)
	return c, nil
}

// output is a child's stdout and stderr: its log file, and its last lines in
// memory, which say why it exited even when the log's disk is full. A
// failing file write is ignored: the child must not get EPIPE.
type output struct {
	mu   sync.Mutex
	file *os.File // nil: no log file
	tail []byte
}

const tailBytes = 4096

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tail = append(o.tail, b...)
	if n := len(o.tail); n > tailBytes {
		o.tail = append([]byte(nil), o.tail[n-tailBytes:]...)
	}
	if o.file != nil {
		_, _ = o.file.Write(b)
	}
	return len(b), nil
}

func (o *output) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.file != nil {
		o.file.Close()
		o.file = nil
	}
}

// lastLines are up to n of the last complete lines written, each cut short.
func (o *output) lastLines(n int) []string {
	o.mu.Lock()
	lines := strings.Split(strings.TrimSpace(string(o.tail)), "\n")
	cut := len(o.tail) == tailBytes
	o.mu.Unlock()
	if cut && len(lines) > 1 {
		lines = lines[1:] // the first may be cut
	}
	lines = lines[max(0, len(lines)-n):]
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = l[:300] + "…"
		}
	}
	return lines
}

// childEnv is the server's environment without proxy settings: the children
// talk to each other on loopback only.
func childEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"http_proxy", "https_proxy", "no_proxy", "all_proxy"}, strings.ToLower(k))
	})
}

// status is how the child ended, once it has; cmd.Wait says nil for 0.
func (c *child) status() string {
	if c.err == nil {
		return "exit status 0"
	}
	return c.err.Error()
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the child's process group, SIGKILL after grace.
func (c *child) stop(grace time.Duration) error {
	if c.exited() {
		return nil
	}
	pid := c.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-c.done:
		return fmt.Errorf("%s did not stop within %s and was killed", c.name, grace)
	case <-time.After(5 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", c.name, pid)
	}
}

// killStale kills what is left of an earlier engine on the same directory
// (one of names with a flag naming one of its paths): children that outlived
// their server would otherwise leave an etcd holding the data.
func killStale(dir string, names []string) ([]int, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, nil // not Linux: nothing to look at
	}
	marks := stalePaths(dir)
	var killed []int
	var errs []error
	for _, p := range procs {
		pid := p.PID
		args, err := p.CmdLine()
		if err != nil || len(args) == 0 || pid == os.Getpid() {
			continue
		}
		if !slices.Contains(names, filepath.Base(args[0])) || !namesPath(args[1:], marks) {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill stale %s (pid %d): %w", filepath.Base(args[0]), pid, err))
			continue
		}
		killed = append(killed, pid)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range killed {
		for alive(pid) {
			if time.Now().After(deadline) {
				errs = append(errs, fmt.Errorf("stale process %d still running", pid))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return killed, errors.Join(errs...)
}

// stalePaths are the flag values only an engine on dir passes.
func stalePaths(dir string) map[string]bool {
	return map[string]bool{
		filepath.Join(dir, "etcd"):                          true,
		filepath.Join(dir, "pki"):                           true,
		filepath.Join(dir, "controller-manager.kubeconfig"): true,
		filepath.Join(dir, nodeKubeconfig):                  true,
	}
}

// namesPath: a --flag=value or "--flag value" argument gives one of marks.
func namesPath(args []string, marks map[string]bool) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		_, v, _ := strings.Cut(a, "=")
		return marks[a] || marks[v]
	})
}

// alive: the process exists and is not a zombie (a zombie holds no files).
func alive(pid int) bool {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return false
	}
	st, err := p.Stat()
	return err == nil && st.State != "Z"
}
