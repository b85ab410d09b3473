package helm_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

var repoRoot = filepath.Join("..", "..")

// dockerfileBuild is the go build command of the Dockerfile: the shell text
// of the RUN instruction that holds it, without its --mount flags.
func dockerfileBuild(t *testing.T, dockerfile string) string {
	t.Helper()
	joined := strings.ReplaceAll(dockerfile, "\\\n", " ")
	var found []string
	for _, line := range strings.Split(joined, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "RUN ") || !strings.Contains(line, "go build") {
			continue
		}
		var words []string
		for _, w := range strings.Fields(strings.TrimPrefix(line, "RUN ")) {
			if !strings.HasPrefix(w, "--mount=") {
				words = append(words, w)
			}
		}
		found = append(found, strings.Join(words, " "))
	}
	if len(found) != 1 {
		t.Fatalf("the Dockerfile has %d RUN instructions with a go build, want 1: %q", len(found), found)
	}
	return found[0]
}

// The image's binary builds the way the Dockerfile says, and runs on
// distroless/base: the Dockerfile's own go build command (cgo on, its
// flags) is run here into a temporary directory, and the binary it makes
// needs no shared library beyond glibc's. Docker itself is not run.
func TestDockerfileBuildsTheBinary(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := string(raw)
	build := dockerfileBuild(t, dockerfile)
	if !strings.HasPrefix(build, "CGO_ENABLED=1 go build ") || !strings.Contains(build, "-o /out/validator-manager ./cmd/validator-manager") {
		t.Fatalf("the Dockerfile's build is %q, want CGO_ENABLED=1 go build … -o /out/validator-manager ./cmd/validator-manager", build)
	}
	// The final stage is the glibc base the binary is linked for, as the
	// user the chart runs it as.
	for _, want := range []string{"FROM gcr.io/distroless/base-debian12:nonroot", "USER 65532:65532", `ENTRYPOINT ["/usr/local/bin/validator-manager"]`} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	deployment, err := os.ReadFile(filepath.Join(chartDir, "templates", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(deployment), "runAsUser: 65532") {
		t.Error("the chart runs the container as another user than the image's (65532)")
	}

	out := t.TempDir()
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(build, "/out/", out+"/"))
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "VERSION=image-test")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, msg)
	}
	bin := filepath.Join(out, "validator-manager")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	if len(libs) == 0 {
		t.Error("the binary links no shared library: cgo (SQLite) is off")
	}
	// What Debian 12's libc6 package, and so distroless/base, holds.
	glibc := regexp.MustCompile(`^(libc|libm|libpthread|libdl|libresolv|librt)\.so\.[0-9]+$|^ld-linux`)
	for _, lib := range libs {
		if !glibc.MatchString(lib) {
			t.Errorf("the binary needs %s, which distroless/base does not have", lib)
		}
	}
	version, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	if got := strings.TrimSpace(string(version)); got != "image-test" {
		t.Errorf("version %q, want image-test (the Dockerfile's -X main.version)", got)
	}
}

// The chart's default image is the one the Dockerfile's header and the
// README tell operators to build: the repository, tagged with appVersion.
func TestChartDefaultImageIsTheBuiltOne(t *testing.T) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	out, err := render(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	image := "ghcr.io/validator-manager/validator-manager:" + ch.Metadata.AppVersion
	if !strings.Contains(out["validator-manager/templates/deployment.yaml"], `image: "`+image+`"`) {
		t.Errorf("the chart's default image is not %s", image)
	}
	want := "docker build --build-arg VERSION=" + ch.Metadata.AppVersion + " -t " + image + " ."
	for _, file := range []string{"Dockerfile", "README.md"} {
		raw, err := os.ReadFile(filepath.Join(repoRoot, file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s does not say %q", file, want)
		}
	}
}
