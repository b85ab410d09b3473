package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// envtestArchive is an archive laid out as controller-tools publishes them, the binaries' contents
// being their names.
func envtestArchive(t *testing.T, names ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, n := range names {
		body := []byte("binary " + n)
		if err := tw.WriteHeader(&tar.Header{Name: "controller-tools/envtest/" + n, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha512Hex(b []byte) string {
	s := sha512.Sum512(b)
	return hex.EncodeToString(s[:])
}

// mirror serves setup-envtest's index, one archive and Kubernetes' release binary with its sha512.
type mirror struct {
	archive     []byte // served
	archiveHash string // in the index
	shortBody   bool   // the archive's transfer ends early (Content-Length says more)
	kcm         []byte
	kcmHash     string // the published .sha512
}

func (m *mirror) serve(t *testing.T) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/envtest-releases.yaml":
			fmt.Fprintf(w, "releases:\n  v1.37.1:\n    envtest-v1.37.1-linux-amd64.tar.gz:\n      hash: %s\n      selfLink: %s/envtest-v1.37.1-linux-amd64.tar.gz\n", m.archiveHash, srv.URL)
		case "/envtest-v1.37.1-linux-amd64.tar.gz":
			if m.shortBody {
				w.Header().Set("Content-Length", fmt.Sprint(len(m.archive)))
				w.Write(m.archive[:len(m.archive)/2])
				return
			}
			w.Write(m.archive)
		case "/release/v1.37.1/bin/linux/amd64/kube-controller-manager":
			w.Write(m.kcm)
		case "/release/v1.37.1/bin/linux/amd64/kube-controller-manager.sha512":
			fmt.Fprintln(w, m.kcmHash)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func testConfig(t *testing.T, base string) (config, *[]string, *bool) {
	t.Helper()
	var lines []string
	built := false
	return config{
		Dir: filepath.Join(t.TempDir(), "v1.37.1"), Version: "v1.37.1", OS: "linux", Arch: "amd64",
		IndexURL: base + "/envtest-releases.yaml", ReleaseURL: base + "/release",
		Build: func(_ context.Context, dir string) error { built = true; return nil },
		Say:   func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) },
	}, &lines, &built
}

// installed lists the binaries in dir and fails on any other file (a download's leftovers).
func installed(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != "binary "+e.Name() {
			t.Errorf("%s holds %q", e.Name(), b)
		}
		if info, _ := e.Info(); info.Mode().Perm()&0o100 == 0 {
			t.Errorf("%s is not executable: %v", e.Name(), info.Mode())
		}
	}
	return names
}

func TestInstall(t *testing.T) {
	t.Parallel()
	good := envtestArchive(t, "etcd", "kube-apiserver", "kubectl")
	truncated := good[:len(good)/2]
	kcm := []byte("binary kube-controller-manager")
	for _, tc := range []struct {
		name      string
		mirror    mirror
		installed []string // afterwards, without the build
		fellBack  string   // the fallback line's reason contains this; "" means no fallback
	}{
		{name: "verified archive and binary installed",
			mirror:    mirror{archive: good, archiveHash: sha512Hex(good), kcm: kcm, kcmHash: sha512Hex(kcm)},
			installed: binaries()},
		{name: "archive checksum mismatch refused",
			mirror:    mirror{archive: good, archiveHash: sha512Hex([]byte("other")), kcm: kcm, kcmHash: sha512Hex(kcm)},
			installed: nil, fellBack: "checksum mismatch for envtest-v1.37.1-linux-amd64.tar.gz"},
		{name: "truncated archive refused although the index's checksum is its own",
			mirror:    mirror{archive: truncated, archiveHash: sha512Hex(truncated), kcm: kcm, kcmHash: sha512Hex(kcm)},
			installed: nil, fellBack: "envtest archive: unexpected EOF"},
		{name: "transfer cut short refused",
			mirror:    mirror{archive: good, archiveHash: sha512Hex(good), shortBody: true, kcm: kcm, kcmHash: sha512Hex(kcm)},
			installed: nil, fellBack: "unexpected EOF"},
		{name: "archive without kube-apiserver refused",
			mirror: func() mirror {
				a := envtestArchive(t, "etcd", "kubectl")
				return mirror{archive: a, archiveHash: sha512Hex(a), kcm: kcm, kcmHash: sha512Hex(kcm)}
			}(),
			installed: nil, fellBack: "no kube-apiserver in it"},
		{name: "kube-controller-manager checksum mismatch refused, the archive's binaries kept",
			mirror:    mirror{archive: good, archiveHash: sha512Hex(good), kcm: kcm, kcmHash: sha512Hex([]byte("other"))},
			installed: []string{"etcd", "kube-apiserver"}, fellBack: "checksum mismatch for kube-controller-manager"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := tc.mirror.serve(t)
			c, lines, built := testConfig(t, srv.URL)
			if err := install(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			if got := installed(t, c.Dir); !slices.Equal(got, tc.installed) {
				t.Errorf("installed %v, want %v", got, tc.installed)
			}
			if *built != (tc.fellBack != "") {
				t.Errorf("built from source: %v; lines %q", *built, *lines)
			}
			last := (*lines)[len(*lines)-1]
			if tc.fellBack != "" && (!strings.HasPrefix(last, "building ") || !strings.Contains(last, tc.fellBack)) {
				t.Errorf("last line %q, want the fallback naming %q", last, tc.fellBack)
			}
			if tc.fellBack == "" && last != "downloaded and verified: etcd, kube-apiserver, kube-controller-manager" {
				t.Errorf("last line %q", last)
			}
		})
	}
}

// An unreachable download host (here a loopback port nothing listens on) falls back to building
// from source, saying so; binaries already there are neither downloaded nor built again.
func TestInstallFallsBackWhenUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + l.Addr().String()
	l.Close()
	c, lines, built := testConfig(t, base)
	if err := install(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if !*built || len(*lines) != 2 || !strings.Contains((*lines)[1], "building etcd, kube-apiserver, kube-controller-manager from source: download failed (envtest index:") ||
		!strings.Contains((*lines)[1], "connection refused") {
		t.Fatalf("built %v, lines %q", *built, *lines)
	}

	for _, b := range binaries() {
		if err := os.WriteFile(filepath.Join(c.Dir, b), []byte("binary "+b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	*built, *lines = false, nil
	if err := install(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if *built || len(*lines) != 0 {
		t.Fatalf("with every binary there: built %v, lines %q", *built, *lines)
	}
}
