package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

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

// ServePprof serves net/http/pprof's handlers on ln until ctx ends.
func ServePprof(ctx context.Context, ln net.Listener, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	log.Info("profiling listener", "address", ln.Addr().String())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
