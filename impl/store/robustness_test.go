package store_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

// TestSQLiteFilesArePrivate: the database and its WAL files are 0600, also
// when an older file was 0644.
func TestSQLiteFilesArePrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vm.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.CreateValidator(context.Background(), &domain.Validator{Name: "v1"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"vm.db", "vm.db-wal", "vm.db-shm"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != 0o600 {
			t.Errorf("%s: mode got %o, want 600", name, got)
		}
	}
}

// TestUnwritableDirectory says so, rather than "no such file".
func TestUnwritableDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes everywhere: run as another user to test an unwritable directory")
	}
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	_, err := store.Open("sqlite", filepath.Join(dir, "vm.db"))
	if err == nil || !strings.Contains(err.Error(), "not writable") {
		t.Fatalf("got %v, want an error saying the directory is not writable", err)
	}
}

// TestOutageIsUnavailable: a database that cannot be reached is a domain
// ErrUnavailable naming the database, which the releases render as 503.
func TestOutageIsUnavailable(t *testing.T) {
	stores := map[string]func(t *testing.T) (*store.Store, func()){
		"sqlite": func(t *testing.T) (*store.Store, func()) {
			s, err := store.Open("sqlite", filepath.Join(t.TempDir(), "vm.db"))
			if err != nil {
				t.Fatal(err)
			}
			return s, func() { s.Close() }
		},
	}
	if os.Getenv("TEST_POSTGRES_DSN") != "" {
		stores["postgres"] = func(t *testing.T) (*store.Store, func()) {
			// Through a proxy on loopback that the test then takes down.
			u, err := url.Parse(throwawayPostgres(t))
			if err != nil {
				t.Fatal(err)
			}
			p := startProxy(t, u.Host)
			u.Host = p.addr()
			s, err := store.Open("postgres", u.String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s, p.stop
		}
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			s, fail := open(t)
			fail()
			_, _, err := s.ListValidators(context.Background(), domain.ValidatorFilter{Page: domain.Page{Limit: 10}})
			if !errors.Is(err, domain.ErrUnavailable) || !strings.Contains(err.Error(), "database") {
				t.Fatalf("got %v, want ErrUnavailable naming the database", err)
			}
		})
	}
}

type proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

// stop refuses new connections and drops the open ones.
func (p *proxy) stop() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
