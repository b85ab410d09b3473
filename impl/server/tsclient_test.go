package server_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/apitest"
)

// TestTypeScriptClient runs the README's client-generation commands as
// written, from the repository root, against a running server: the
// TypeScript clients (openapi-typescript) type-check testdata/tsclient's
// calls of public and protected operations with tsc and run them against the
// server (openapi-fetch); the Go clients (oapi-codegen) compile. The Node
// tools are the ones package-lock.json pins (`npm ci`, which `make test`
// runs first).
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
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
	// The README's commands, as written, from the repository root (where a
	// tool may pick up configuration files), against this server.
	commands := readmeClientCommands(t, root)
	if len(commands) != 4 {
		t.Fatalf("README client commands: got %q, want two openapi-typescript and two oapi-codegen lines", commands)
	}
	if err := os.MkdirAll(filepath.Join(dir, "gen"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, line := range commands {
		line = strings.ReplaceAll(line, "https://vm.example.com", s.URL)
		args := strings.Fields(line)
		for i, a := range args {
			if i > 0 && args[i-1] == "-o" {
				args[i] = filepath.Join(dir, "gen", a) // the README writes into the working directory
			}
		}
		if args[0] == "npx" {
			args[0] = bin(args[1]) // what npx runs in the root: the pinned tool
			args = append(args[:1], args[2:]...)
		}
		if args[0] == "go" {
			args[0] = goTool(t)
		}
		run(t, root, args[0], args[1:]...)
	}
	for _, name := range []string{"platform", "management"} {
		// client.ts imports gen/<release>.ts; the Go clients compile below.
		if _, err := os.Stat(filepath.Join(dir, "gen", name+".ts")); err != nil {
			t.Fatal(err)
		}
	}
	run(t, dir, bin("tsc"), "-p", filepath.Join(dir, "tsconfig.json"))
	run(t, dir, node, filepath.Join(dir, "run.mjs"), s.URL, s.Token)
	for _, name := range []string{"platform", "management"} {
		// Each generated Go client compiles on its own (vet type-checks it).
		pkg := filepath.Join(dir, "goclient", name)
		if err := os.MkdirAll(pkg, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "gen", name+".gen.go"), filepath.Join(pkg, name+".gen.go")); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "goclient", "doc.go"), []byte("package goclient\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Inside this module, so the client resolves oapi-codegen's runtime as pinned.
	check := filepath.Join(root, "impl", "server", "testdata", "readmeclient")
	if err := os.MkdirAll(filepath.Dir(check), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "goclient"), check); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(check) })
	run(t, root, goTool(t), "vet", "./impl/server/testdata/readmeclient/...")
}

// readmeClientCommands are the README's client-generation command lines.
func readmeClientCommands(t *testing.T, root string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "npx openapi-typescript ") || strings.HasPrefix(line, "go run github.com/oapi-codegen/") {
			out = append(out, line)
		}
	}
	return out
}

func goTool(t *testing.T) string {
	t.Helper()
	g, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	return g
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
