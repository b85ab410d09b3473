package server

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/validator-manager/validator-manager/impl/config"
)

// ListenPprof opens the opt-in profiling listener (server.pprofListen). It
// refuses any address but loopback: profiles and heap dumps expose the
// process's memory, tokens included.
func ListenPprof(addr string) (net.Listener, error) {
	if !config.Loopback(addr) {
		return nil, fmt.Errorf("server.pprofListen: %q is not a loopback address", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("server.pprofListen: %w", err)
	}
	if ip, ok := ln.Addr().(*net.TCPAddr); !ok || !ip.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("server.pprofListen: %q resolved to %s, not loopback", addr, ln.Addr())
	}
	return ln, nil
}

// pprofShutdown bounds how long a profile in flight may finish when the
// process stops: a CPU profile runs for its whole duration.
const pprofShutdown = time.Second

// Pprof serves net/http/pprof's handlers on ln as a Runnable of the
// Manager: on every replica, started with the others and stopped last.
func Pprof(ln net.Listener) *manager.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	grace := pprofShutdown
	return &manager.Server{Name: "pprof", Listener: ln, ShutdownTimeout: &grace,
		Server: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
}
