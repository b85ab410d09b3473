package ci

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the work tree this package lives in (cmd/ci).
const repoRoot = "../.."

// TestCheckGenerated runs .ci/check-generated on copies of the work tree: it passes on the tree as
// it is and fails, saying why, on a stale generated file and on a generator that fails.
func TestCheckGenerated(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: make generate cannot run")
	}
	for _, tool := range []string{"git", "make", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH; the README lists it as needed", tool)
		}
	}
	tests := []struct {
		name    string
		spoil   func(t *testing.T, dir string)
		wantErr bool
		want    []string // in the output
	}{
		{name: "clean tree", want: []string{"generated code is up to date"}},
		{
			name: "a generated file changed by hand",
			spoil: func(t *testing.T, dir string) {
				appendTo(t, filepath.Join(dir, "gen/upstream/adminapi/crypto/v30/crypto.pb.go"), "\n")
			},
			wantErr: true,
			want:    []string{"gen/upstream/adminapi/crypto/v30/crypto.pb.go", "generated code is stale"},
		},
		{
			name: "a generator fails",
			spoil: func(t *testing.T, dir string) {
				appendTo(t, filepath.Join(dir, "openapi/proto/com/digitalasset/canton/crypto/v30/crypto.proto"), "message {\n")
			},
			wantErr: true,
			want:    []string{"crypto.proto", "make generate failed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := copyWorkTree(t)
			if tt.spoil != nil {
				tt.spoil(t, dir)
			}
			out, err := run(dir, "bash", ".ci/check-generated")
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("check-generated failed: %v, want failure %v; output:\n%s", err, tt.wantErr, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestStagesStopAtFirstFailure runs .ci/stages with a stand-in for make that records each stage.
func TestStagesStopAtFirstFailure(t *testing.T) {
	tests := []struct {
		name    string
		stages  []string
		wantRan string
		wantErr bool
		want    string
	}{
		{name: "all pass", stages: []string{"one", "two"}, wantRan: "one\ntwo\n", want: "==> one two done"},
		{name: "second fails", stages: []string{"one", "fail", "three"}, wantRan: "one\nfail\n", wantErr: true, want: "==> fail failed"},
		{name: "first fails", stages: []string{"fail", "two"}, wantRan: "fail\n", wantErr: true, want: "==> fail failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fake := filepath.Join(dir, "make.sh")
			ran := filepath.Join(dir, "ran")
			script := "echo \"$1\" >> '" + ran + "'\n[ \"$1\" != fail ]\n"
			if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			stages, err := filepath.Abs(filepath.Join(repoRoot, ".ci/stages"))
			if err != nil {
				t.Fatal(err)
			}
			out, err := run(dir, "bash", append([]string{stages, "sh " + fake}, tt.stages...)...)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("stages failed: %v, want failure %v; output:\n%s", err, tt.wantErr, out)
			}
			got, err := os.ReadFile(ran)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.wantRan {
				t.Errorf("stages ran %q, want %q", got, tt.wantRan)
			}
			if !strings.Contains(out, tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, out)
			}
		})
	}
}

// copyWorkTree copies every file of the work tree git does not ignore (committed or not) into a
// new git repository in a temporary directory, so that a check can change it freely.
func copyWorkTree(t *testing.T) string {
	t.Helper()
	list, err := exec.Command("git", "-C", repoRoot, "ls-files", "-z", "-co", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dst := t.TempDir()
	for _, name := range strings.Split(strings.TrimSuffix(string(list), "\x00"), "\x00") {
		if err := copyFile(filepath.Join(repoRoot, name), filepath.Join(dst, name)); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := run(dst, "git", "init", "-q"); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return dst
}

// copyFile copies a regular file or a symbolic link; a file deleted but still tracked is skipped.
func copyFile(src, dst string) error {
	info, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, info.Mode().Perm())
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// run runs a command in dir and returns its standard output and error together.
func run(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
