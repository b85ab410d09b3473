package recovery

import (
	"cmp"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// Paths of the validator app, under the wallet URL.
const (
	snapshotPath = "/api/validator/v0/admin/domain/data-snapshot"
	livenessPath = "/api/validator/livez"
)

// maxExcerpt bounds the part of an error body that goes into a message.
const maxExcerpt = 200

// fetch is steps 2 and 3: it streams the data_snapshot member of the wallet
// app's answer into a temporary file, hashing it, then renames it to path.
func (p *Procedure) fetch(ctx context.Context, out *progress, token, path string) (int64, string, error) {
	q := url.Values{"timestamp": {p.Timestamp}, "force": {"true"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(p.WalletURL, "/")+snapshotPath+"?"+q.Encode(), nil)
	if err != nil {
		return 0, "", out.fail(2, err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json") // as the procedure shows it
	req.Header.Set("Accept", "application/json")
	resp, err := cmp.Or(p.HTTP, http.DefaultClient).Do(req)
	if err != nil {
		return 0, "", out.fail(2, fmt.Errorf("wallet app: %w", err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return 0, "", out.fail(2, fmt.Errorf("wallet app answered %s%s", resp.Status, excerpt(resp.Body)))
	}

	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-*") // mode 0600
	if err != nil {
		return 0, "", out.fail(3, err)
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	file := &fileWriter{w: tmp}
	hash := md5.New()
	if err := copyMember(resp.Body, "data_snapshot", io.MultiWriter(file, hash)); err != nil {
		if file.err != nil {
			return 0, "", out.fail(3, fmt.Errorf("write %s: %w", tmp.Name(), file.err))
		}
		return 0, "", out.fail(2, fmt.Errorf("wallet app response: %w", err))
	}
	out.done("%s", size(file.n))

	sum := hex.EncodeToString(hash.Sum(nil))
	out.step(3, "Saving data_snapshot to %s", path)
	if err := tmp.Sync(); err != nil {
		return 0, "", out.fail(3, err)
	}
	if err := tmp.Close(); err != nil {
		return 0, "", out.fail(3, err)
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return 0, "", out.fail(3, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, "", out.fail(3, err)
	}
	keep = true
	out.done("md5 %s", sum)
	return file.n, sum, nil
}

// alive is the dry run's step 2. Not readiness: after a synchronizer failure
// the app may well be unready and still serve the snapshot.
func (p *Procedure) alive(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(p.WalletURL, "/")+livenessPath, nil)
	if err != nil {
		return err
	}
	resp, err := cmp.Or(p.HTTP, http.DefaultClient).Do(req)
	if err != nil {
		return fmt.Errorf("wallet app: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("wallet app %s answered %s%s", livenessPath, resp.Status, excerpt(resp.Body))
	}
	return nil
}

// excerpt is ": " and the start of body, one line of printable text, or "".
// The caller masks secrets.
func excerpt(body io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(body, 4*maxExcerpt))
	s := strings.Join(strings.FieldsFunc(string(b), func(r rune) bool {
		return unicode.IsSpace(r) || !unicode.IsPrint(r)
	}), " ")
	if r := []rune(s); len(r) > maxExcerpt {
		s = string(r[:maxExcerpt]) + "…"
	}
	if s == "" {
		return ""
	}
	return ": " + s
}

// fileWriter counts the bytes written and remembers a write error,
// telling a full disk (step 3) from a broken download (step 2).
type fileWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (f *fileWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.n += int64(n)
	if err != nil {
		f.err = err
	}
	return n, err
}
