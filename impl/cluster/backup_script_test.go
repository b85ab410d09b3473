package cluster_test

import (
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/cluster"
)

// The backup Job's script, run by the machine's POSIX sh over a temporary
// directory, with a stub pg_dumpall.
func TestBackupScript(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on this machine")
	}
	for _, tool := range []string{"gzip", "date", "sort", "tail", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s on this machine", tool)
		}
	}
	bin := t.TempDir()
	stub := `#!/bin/sh
# pg_dumpall stub: writes a fake dump to --file=PATH, or fails on request.
[ "${STUB_FAIL:-}" = "" ] || { echo "connection refused" >&2; exit 1; }
for a in "$@"; do case "$a" in --file=*) f="${a#--file=}" ;; esac; done
printf 'dump of %s as %s\n' "$PGHOST" "$PGUSER" > "$f"
`
	if err := os.WriteFile(filepath.Join(bin, "pg_dumpall"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	old := []string{
		"backup-20200101T000000Z.sql.gz", "backup-20200102T000000Z.sql.gz", "backup-20200103T000000Z.sql.gz",
		"backup-20200104T000000Z.sql.gz", "backup-20200105T000000Z.sql.gz",
	}
	others := []string{"notes.txt", "backup-latest.sql.gz"}
	seed := func(t *testing.T) string {
		dir := t.TempDir()
		for _, f := range append(slices.Clone(old), others...) {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	runScript := func(dir string, env ...string) (string, int) {
		cmd := exec.Command(sh, "-c", cluster.BackupScript)
		cmd.Env = append([]string{
			"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
			"BACKUP_DIR=" + dir, "PGHOST=v1-postgres", "PGUSER=postgres",
		}, env...)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	list := func(t *testing.T, dir string) []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	dumpName := regexp.MustCompile(`^backup-\d{8}T\d{6}Z\.sql\.gz$`)

	t.Run("dumps and keeps the newest", func(t *testing.T) {
		dir := seed(t)
		out, code := runScript(dir, "MAX_BACKUPS=3")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
		var dumps, rest []string
		for _, n := range list(t, dir) {
			if dumpName.MatchString(n) {
				dumps = append(dumps, n)
			} else {
				rest = append(rest, n)
			}
		}
		if len(dumps) != 3 || dumps[0] != old[3] || dumps[1] != old[4] || slices.Contains(old, dumps[2]) {
			t.Fatalf("dumps: got %v, want %s, %s and the new one", dumps, old[3], old[4])
		}
		slices.Sort(rest)
		if !slices.Equal(rest, []string{"backup-latest.sql.gz", "notes.txt"}) {
			t.Errorf("other files: got %v, want them untouched", rest)
		}
		f, err := os.Open(filepath.Join(dir, dumps[2]))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("new dump is not gzip: %v", err)
		}
		data, _ := io.ReadAll(zr)
		if string(data) != "dump of v1-postgres as postgres\n" {
			t.Errorf("new dump: got %q", data)
		}
		if !strings.Contains(out, "backup written: "+dumps[2]) || !strings.Contains(out, "old backup removed: "+old[0]) {
			t.Errorf("output: got %q", out)
		}
	})

	t.Run("a failed dump changes nothing", func(t *testing.T) {
		dir := seed(t)
		before := list(t, dir)
		out, code := runScript(dir, "MAX_BACKUPS=2", "STUB_FAIL=1")
		if code == 0 {
			t.Fatalf("exit 0, want a failure: %s", out)
		}
		if after := list(t, dir); !slices.Equal(after, before) {
			t.Errorf("files: got %v, want %v (no partial dump, nothing removed)", after, before)
		}
	})

	for _, bad := range []string{"MAX_BACKUPS=", "MAX_BACKUPS=x", "MAX_BACKUPS=0", "MAX_BACKUPS=-1"} {
		t.Run("refuses "+bad, func(t *testing.T) {
			dir := seed(t)
			before := list(t, dir)
			if out, code := runScript(dir, bad); code != 2 {
				t.Errorf("exit %d, want 2: %s", code, out)
			}
			if after := list(t, dir); !slices.Equal(after, before) {
				t.Errorf("files: got %v, want unchanged", after)
			}
		})
	}
}
