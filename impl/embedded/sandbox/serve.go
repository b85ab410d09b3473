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
// is known and connections wait in the backlog; Start serves them.
type servers struct {
	mu      sync.Mutex
	all     []server
	queued  []server // opened, not yet served
	stopped bool
	wake    chan struct{}
}

func newServers() *servers { return &servers{wake: make(chan struct{}, 1)} }

var errStopped = errors.New("sandbox: the network is stopped")

// add hands s to Start; refused once the network has stopped.
func (ss *servers) add(s server) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stopped {
		s.shutdown(closedContext())
		return errStopped
	}
	ss.all = append(ss.all, s)
	ss.queued = append(ss.queued, s)
	select {
	case ss.wake <- struct{}{}:
	default:
	}
	return nil
}

func (ss *servers) take() []server {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	q := ss.queued
	ss.queued = nil
	return q
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
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		for _, s := range n.servers.take() {
			wg.Go(s.serve)
		}
		select {
		case <-n.servers.wake:
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
			defer cancel()
			n.servers.stop(sctx)
			return nil
		}
	}
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
