package server_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/apitest"
)

// TestTypeScriptClient generates a TypeScript client with openapi-typescript
// from each document the server serves, type-checks testdata/tsclient's
// calls of public and protected operations with tsc, and runs them against
// the server (openapi-fetch). The tools are the ones package-lock.json pins
// (`npm ci`, which `make test` runs first).
func TestTypeScriptClient(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	modules := filepath.Join(root, "node_modules")
	bin := func(name string) string { return filepath.Join(modules, ".bin", name) }
	if _, err := os.Stat(bin("openapi-typescript")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("openapi-typescript is not installed (run npm ci): %v", err)
		}
		t.Skip("openapi-typescript is not installed: run `npm ci` (make test does)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}

	dir := t.TempDir()
	for _, name := range []string{"client.ts", "tsconfig.json", "run.mjs", "package.json"} {
		raw, err := os.ReadFile(filepath.Join(root, "testdata", "tsclient", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}

	s := apitest.Start(t, apitest.Options{})
	ctx := t.Context()
	plat, err := s.Public.GetApiDocsWithResponse(ctx)
	if err != nil || plat.StatusCode() != 200 {
		t.Fatalf("/v3/api-docs: %v", err)
	}
	mgmt, err := s.Public.GetManagementApiDocsWithResponse(ctx)
	if err != nil || mgmt.StatusCode() != 200 {
		t.Fatalf("/v3/api-docs/management: %v", err)
	}
	for name, doc := range map[string][]byte{"platform": plat.Body, "management": mgmt.Body} {
		in := filepath.Join(dir, name+".json")
		if err := os.WriteFile(in, doc, 0o600); err != nil {
			t.Fatal(err)
		}
		run(t, dir, bin("openapi-typescript"), in, "-o", filepath.Join(dir, "gen", name+".ts"))
	}
	run(t, dir, bin("tsc"), "-p", filepath.Join(dir, "tsconfig.json"))
	run(t, dir, node, filepath.Join(dir, "run.mjs"), s.URL, s.Token)
}

func run(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
	}
	t.Logf("%s: %s", filepath.Base(name), time.Since(start).Round(time.Millisecond))
}
