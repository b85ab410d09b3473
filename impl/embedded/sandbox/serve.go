package sandbox

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// shutdownGrace bounds how long requests in flight may finish once the
// network stops: simulated upstreams answer in milliseconds.
const shutdownGrace = 5 * time.Second

// server is one of the network's listeners with what serves it.
type server interface {
	serve()
	// shutdown lets requests in flight finish until ctx ends, then closes
	// what is left, the listener included (served or not).
	shutdown(ctx context.Context)
}

// servers are the network's listeners. Each is opened at once, so its
// address is known and its connections wait in the backlog, and is served
// by Start, which owns every serving goroutine.
type servers struct {
	mu      sync.Mutex
	all     []server
	queued  []server // opened, not yet served
	stopped bool
	wake    chan struct{}
}

func newServers() *servers { return &servers{wake: make(chan struct{}, 1)} }

// errStopped answers a node asked for after the network stopped.
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

// stop shuts every listener down (see server.shutdown) and refuses new ones.
func (ss *servers) stop(ctx context.Context) {
	ss.mu.Lock()
	all := ss.all
	ss.all, ss.queued, ss.stopped = nil, nil, true
	ss.mu.Unlock()
	for _, s := range all {
		s.shutdown(ctx)
	}
}

// Start serves the network's listeners, those open now and those its nodes
// open later, until ctx ends; then it stops them, letting requests in
// flight finish for a few seconds, and returns once none is served: a
// Runnable of the Manager.
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

// listen opens a fresh loopback port.
func listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// port is the port of a listener listen opened.
func port(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }

// listener is an HTTP listener of the network (the scan service's, a
// node's ledger or validator app).
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
