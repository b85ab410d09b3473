package server_test

import (
	"bytes"
	"net"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/apitest"
)

// TestIdleWatchersMemory: 1,000 idle watchers of release 2.0's stream, each
// caught up and then silent, add less than 50 MB to the server: the Go
// heap and goroutine stacks in use after a collection, measured before and
// after (the watchers' client side is raw connections in this process, so
// the figure is an upper bound). docs/benchmarks.md records the figure.
func TestIdleWatchersMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1,000 connections")
	}
	const watchers = 1000
	s := apitest.Start(t, apitest.Options{Watch: true})
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	request := []byte("GET /api/v1/watch/validators HTTP/1.1\r\nHost: " + u.Host + "\r\nAuthorization: Bearer " + s.Token + "\r\nAccept: text/event-stream\r\n\r\n")
	// One stream first: the server's one-off allocations (routes, caches,
	// the contract's validators) are not the watchers'.
	warm := dialWatcher(t, u.Host, request, make([]byte, 64<<10))
	defer warm.Close()

	before, stackBefore, rssBefore := inUse()
	conns := make([]net.Conn, 0, watchers)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	buf := make([]byte, 64<<10)
	start := time.Now()
	for range watchers {
		conns = append(conns, dialWatcher(t, u.Host, request, buf))
	}
	opened := time.Since(start)
	after, stackAfter, rssAfter := inUse()
	added := float64(after-before) / (1 << 20)
	t.Logf("%d idle watchers (opened in %s): heap and stacks in use %+.1f MiB (%.1f KiB each, stacks %.1f KiB); process RSS %+.1f MiB, client side included",
		watchers, opened.Round(time.Millisecond), added, float64(after-before)/watchers/1024, float64(stackAfter-stackBefore)/watchers/1024,
		float64(rssAfter-rssBefore)/(1<<20))
	if added >= 50 {
		t.Fatalf("1,000 idle watchers added %.1f MiB, want less than 50", added)
	}
}

// dialWatcher opens one stream and reads until it is caught up.
func dialWatcher(t *testing.T, host string, request, buf []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(request); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var seen []byte
	for !bytes.Contains(seen, []byte("event: synced")) {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("watcher: %v after %q", err, seen)
		}
		seen = append(seen, buf[:n]...)
	}
	if !bytes.HasPrefix(seen, []byte("HTTP/1.1 200")) {
		t.Fatalf("watcher: %q", seen)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c
}

// inUse is the Go heap and stacks in use after a full collection, the
// stacks alone, and the process's resident set (bytes).
func inUse() (uint64, uint64, uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	var rss uint64
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			pages, _ := strconv.ParseUint(f[1], 10, 64)
			rss = pages * uint64(os.Getpagesize())
		}
	}
	return m.HeapInuse + m.StackInuse, m.StackInuse, rss
}
