package sandbox

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// shutdownGrace is short: simulated upstreams answer in milliseconds.
const shutdownGrace = 5 * time.Second

type server interface {
	serve()
	// shutdown lets requests in flight finish until ctx ends, then closes
	// the rest, the listener included (served or not).
	shutdown(ctx context.Context)
}

// servers are the network's listeners, opened at once so that their address
// is known and connections wait in the backlog: Start serves those opened
// before it, add serves the later ones.
type servers struct {
	mu      sync.Mutex
	all     []server
	queued  []server // opened before Start
	serving bool
	stopped bool
	wg      sync.WaitGroup // the servers served
}

var errStopped = errors.New("sandbox: the network is stopped")

// add serves s, or hands it to Start; refused once the network has stopped.
func (ss *servers) add(s server) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stopped {
		s.shutdown(closedContext())
		return errStopped
	}
	ss.all = append(ss.all, s)
	if ss.serving {
		ss.wg.Go(s.serve)
	} else {
		ss.queued = append(ss.queued, s)
	}
	return nil
}

// stop shuts every listener down and refuses new ones.
func (ss *servers) stop(ctx context.Context) {
	ss.mu.Lock()
	all := ss.all
	ss.all, ss.queued, ss.stopped = nil, nil, true
	ss.mu.Unlock()
	for _, s := range all {
		s.shutdown(ctx)
	}
}

// Start serves the network's listeners, those its nodes open later too,
// until ctx ends, and returns once none is served: a Runnable of the Manager.
func (n *Network) Start(ctx context.Context) error {
	ss := n.servers
	ss.mu.Lock()
	ss.serving = true
	for _, s := range ss.queued {
		ss.wg.Go(s.serve)
	}
	ss.queued = nil
	ss.mu.Unlock()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	ss.stop(sctx)
	ss.wg.Wait()
	return nil
}

func closedContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func port(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }

type listener struct {
	url string
	srv *http.Server
	ln  net.Listener
}

func (l *listener) serve() { _ = l.srv.Serve(l.ln) }

func (l *listener) shutdown(ctx context.Context) {
	if l.srv.Shutdown(ctx) != nil {
		_ = l.srv.Close()
	}
	_ = l.ln.Close()
}

func (g *grpcListener) serve() { _ = g.srv.Serve(g.ln) }

func (g *grpcListener) shutdown(ctx context.Context) {
	done := make(chan struct{})
	go func() { g.srv.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		g.srv.Stop()
		<-done
	}
	_ = g.ln.Close()
}
