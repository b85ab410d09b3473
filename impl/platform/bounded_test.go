package platform_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/config"
)

// TestTricklingUploadIsCut: a DAR upload whose bytes each arrive within
// server.bodyReadTimeout but which does not arrive whole within
// upstream.timeout is answered 408 naming upstream.timeout, and the
// connection is not held afterwards.
func TestTricklingUploadIsCut(t *testing.T) {
	s := startWithValidator(t, func(c *config.Config) {
		// A byte every 100 ms keeps each read well within the body's read
		// timeout even when the machine is busy (a tick late by two
		// seconds would end the upload as a stalled body instead).
		c.BodyReadTimeout = 2 * time.Second
		c.UpstreamTimeout = 3 * time.Second
	})
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	prologue := "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.dar\"\r\nContent-Type: application/octet-stream\r\n\r\n"
	head := "POST /api/v1/validators/" + validator + "/dars/upload HTTP/1.1\r\nHost: vm.test\r\n" +
		"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n" +
		"Authorization: Bearer " + s.Token + "\r\n\r\n" + prologue
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		resp *http.Response
		body string
		err  error
	}
	answers := make(chan answer, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		a := answer{resp: resp, err: err}
		if err == nil {
			raw, _ := io.ReadAll(resp.Body)
			a.body = string(raw)
		}
		answers <- a
	}()
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond) // well within bodyReadTimeout
	defer tick.Stop()
	for {
		select {
		case a := <-answers:
			took := time.Since(start)
			if a.err != nil {
				t.Fatalf("no answer after %s: %v", took, a.err)
			}
			if a.resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(a.body, "upstream.timeout") {
				t.Fatalf("got %d %s, want 408 naming upstream.timeout\n%s", a.resp.StatusCode, a.body, s.Logs())
			}
			if took > 6*time.Second {
				t.Fatalf("answered after %s, want about 3s", took)
			}
			return
		case <-tick.C:
			if time.Since(start) > 12*time.Second {
				t.Fatal("no answer after 12s of trickling")
			}
			_, _ = io.WriteString(conn, "x")
		}
	}
}
