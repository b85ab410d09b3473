// Command engine installs the control plane the embedded default runs (etcd, kube-apiserver and
// kube-controller-manager of engine.Version) into a folder, by default the user cache where
// `serve` finds them (`make engine`). It prints only the folder on stdout (for KUBEBUILDER_ASSETS)
// and one progress line per stage on stderr.
//
// Prebuilt binaries first: etcd and kube-apiserver come from the envtest archive that
// controller-runtime's setup-envtest downloads (its index, controller-tools' envtest-releases.yaml,
// names the archive of each version and platform and its sha512), read with setup-envtest's own
// client; kube-controller-manager, which those archives do not carry, is Kubernetes' release
// binary, checked against the sha512 file published beside it. Only what could not be downloaded
// and verified is built from source (testdata/envtest/build.sh), and one line says why.
package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/tools/setup-envtest/remote"
	"sigs.k8s.io/controller-runtime/tools/setup-envtest/versions"

	"github.com/validator-manager/validator-manager/impl/embedded/engine"
)

// Binaries the embedded default starts; the first two are in the envtest archive.
var (
	archived = []string{"etcd", "kube-apiserver"}
	released = "kube-controller-manager"
)

func binaries() []string { return append(slices.Clone(archived), released) }

// config says where the binaries go and where they come from.
type config struct {
	Dir        string
	Version    string // e.g. v1.37.1
	OS, Arch   string
	IndexURL   string // setup-envtest's index
	ReleaseURL string // <ReleaseURL>/<Version>/bin/<OS>/<Arch>/<binary>(.sha512)
	// Build builds the binaries still missing in dir from source.
	Build func(ctx context.Context, dir string) error
	// Say prints a progress line.
	Say func(format string, args ...any)
}

func main() {
	c := config{Version: engine.Version, OS: runtime.GOOS, Arch: runtime.GOARCH}
	flag.StringVar(&c.Dir, "dir", engine.CacheDir(), "folder to install into")
	flag.StringVar(&c.IndexURL, "index", remote.DefaultIndexURL, "setup-envtest's index of envtest archives")
	flag.StringVar(&c.ReleaseURL, "release", "https://dl.k8s.io/release", "Kubernetes' release binaries")
	script := flag.String("build", "testdata/envtest/build.sh", "script building what is missing from source")
	flag.Parse()
	start := time.Now()
	c.Say = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%4ds] %s\n", int(time.Since(start).Seconds()), fmt.Sprintf(format, args...))
	}
	c.Build = func(ctx context.Context, dir string) error {
		cmd := exec.CommandContext(ctx, "bash", *script, dir)
		cmd.Stderr = os.Stderr // its progress lines; stdout repeats the folder
		return cmd.Run()
	}
	if err := install(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "engine:", err)
		os.Exit(1)
	}
	fmt.Println(c.Dir)
}

// install puts the missing binaries into c.Dir: downloaded where it can, built otherwise.
func install(ctx context.Context, c config) error {
	missing := missingIn(c.Dir)
	if len(missing) == 0 {
		return nil
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	c.Say("downloading %s %s for %s/%s into %s", strings.Join(missing, ", "), c.Version, c.OS, c.Arch, c.Dir)
	err := download(ctx, c, missing)
	if err == nil {
		c.Say("downloaded and verified: %s", strings.Join(missing, ", "))
		return nil
	}
	c.Say("building %s from source: download failed (%v)", strings.Join(missingIn(c.Dir), ", "), err)
	return c.Build(ctx, c.Dir)
}

func missingIn(dir string) []string {
	var missing []string
	for _, b := range binaries() {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			missing = append(missing, b)
		}
	}
	return missing
}

// download installs what it can of missing, each binary only once verified, and returns the first
// failure. The index host not answering fails fast, so the kube-controller-manager download is
// not tried after it either.
func download(ctx context.Context, c config, missing []string) error {
	if slices.ContainsFunc(archived, func(b string) bool { return slices.Contains(missing, b) }) {
		if err := fromArchive(ctx, c); err != nil {
			return err
		}
	}
	if slices.Contains(missing, released) {
		return fromRelease(ctx, c)
	}
	return nil
}

// fromArchive downloads the envtest archive named by setup-envtest's index, which checks it against
// the index's sha512, and installs its etcd and kube-apiserver.
func fromArchive(ctx context.Context, c config) error {
	ver, err := versions.FromExpr(strings.TrimPrefix(c.Version, "v"))
	concrete := ver.AsConcrete()
	if err != nil || concrete == nil {
		return fmt.Errorf("version %q is not a release", c.Version)
	}
	client := &remote.HTTPClient{IndexURL: c.IndexURL}
	item := versions.PlatformItem{Platform: versions.Platform{OS: c.OS, Arch: c.Arch}}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := client.FetchSum(ictx, *concrete, &item); err != nil {
		return fmt.Errorf("envtest index: %w", err)
	}
	f, err := os.CreateTemp(c.Dir, ".envtest-*.tar.gz")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := client.GetVersion(dctx, *concrete, item, f); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return unpack(f, c.Dir, archived)
}

// unpack writes the named binaries of a .tar.gz into dir (by base name, as setup-envtest's store
// does), each under a temporary name first; nothing is installed unless every one was read whole.
func unpack(r io.Reader, dir string, names []string) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("envtest archive: %w", err)
	}
	tr := tar.NewReader(gz)
	staged := map[string]string{}
	defer func() {
		for _, tmp := range staged {
			os.Remove(tmp)
		}
	}()
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("envtest archive: %w", err)
		}
		name := filepath.Base(h.Name)
		if h.Typeflag != tar.TypeReg || !slices.Contains(names, name) {
			continue
		}
		tmp, err := stage(dir, name, tr)
		if err != nil {
			return fmt.Errorf("envtest archive: %s: %w", name, err)
		}
		staged[name] = tmp
	}
	for _, n := range names {
		if _, ok := staged[n]; !ok {
			return fmt.Errorf("envtest archive: no %s in it", n)
		}
	}
	for n, tmp := range staged {
		if err := os.Rename(tmp, filepath.Join(dir, n)); err != nil {
			return err
		}
		delete(staged, n)
	}
	return nil
}

// stage copies r into an executable temporary file in dir and returns its path.
func stage(dir, name string, r io.Reader) (string, error) {
	f, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o755)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// fromRelease downloads kube-controller-manager from Kubernetes' releases and installs it when its
// sha512 is the one published beside it.
func fromRelease(ctx context.Context, c config) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	url := fmt.Sprintf("%s/%s/bin/%s/%s/%s", c.ReleaseURL, c.Version, c.OS, c.Arch, released)
	sumFile, err := open(ctx, url+".sha512")
	if err != nil {
		return err
	}
	sum, err := io.ReadAll(io.LimitReader(sumFile, 4096))
	sumFile.Close()
	if err != nil {
		return err
	}
	fields := strings.Fields(string(sum))
	if len(fields) == 0 {
		return fmt.Errorf("%s.sha512 is empty", url)
	}
	body, err := open(ctx, url)
	if err != nil {
		return err
	}
	defer body.Close()
	h := sha512.New()
	tmp, err := stage(c.Dir, released, io.TeeReader(body, h))
	if err != nil {
		return fmt.Errorf("%s: %w", released, err)
	}
	defer os.Remove(tmp)
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, fields[0]) {
		return fmt.Errorf("checksum mismatch for %s: %s (computed) != %s (published)", released, got, fields[0])
	}
	return os.Rename(tmp, filepath.Join(c.Dir, released))
}

// open GETs url and returns its body when the status is 200.
func open(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return resp.Body, nil
}
