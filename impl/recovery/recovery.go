// Package recovery runs the operator procedure of release 1.11's "Recovery
// after failure of the shared synchronizer": the wallet app's data snapshot,
// copied into the validator pod, then the validator's migration bumped.
package recovery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/idp"
)

// DumpPath is where the validator app reads the migration dump.
const DumpPath = "/domain-upgrade-dump/domain_migration_dump.json"

// Defaults of Procedure.
const (
	DefaultPollInterval = 2 * time.Second
	DefaultTimeout      = 5 * time.Minute
)

// Pods reaches into the validator's pod (impl/cluster.PodExec over client-go).
type Pods interface {
	// Find returns the running pod of the validator app and its container.
	Find(ctx context.Context, validator string) (pod, container string, err error)
	// Copy writes r to path in the container, creating its directory.
	Copy(ctx context.Context, pod, container, path string, r io.Reader) error
	// MD5 is the hex MD5 of the file at path in the container.
	MD5(ctx context.Context, pod, container, path string) (string, error)
	// CheckExec says why no command can run in pod (a node without a
	// kubelet), nil when nothing tells so before trying.
	CheckExec(ctx context.Context, pod string) error
}

// Procedure is one run of the recovery procedure. Fill it and call Run.
type Procedure struct {
	// Validator is the validator's name; its wallet client is
	// <Validator>-wallet-ui and its wallet user <Validator>_walletuser.
	Validator string
	// Timestamp is the one the network operators announced, in the format of
	// the validator logs (RFC 3339 UTC, e.g. 2025-07-01T10:30:00.000Z).
	Timestamp string
	// MigrationID is the new migration id. 0 means the current one + 1 (0 is
	// never valid: the new id must be greater than the current one).
	MigrationID int32
	// AuthURL is the Keycloak base URL, including /auth when the Keycloak
	// serves under it; Realm is the realm of the wallet user.
	AuthURL string
	Realm   string
	// WalletPassword is the wallet user's password. Secret.
	WalletPassword string
	// WalletURL is the base URL of the validator app (the data snapshot is
	// under /api/validator), e.g. http://v-validator-app.ns.svc.cluster.local:5003.
	WalletURL string
	// OutDir receives <Validator>-domain_migration_dump.json; "" is the
	// current directory.
	OutDir string
	// DryRun checks the token, the wallet app, the validator, the new
	// migration id and the pod, and prints what would be done; it writes,
	// copies and edits nothing, and does not request the snapshot.
	DryRun bool

	// Management is a client of validator-manager's release 1.11 API.
	Management managementapi.ClientWithResponsesInterface
	Pods       Pods
	// HTTP calls the wallet app. nil: a client without an overall timeout
	// (the snapshot can take minutes); ctx bounds the call.
	HTTP *http.Client
	// Progress receives one line per step; nil discards it.
	Progress io.Writer
	// Secrets are further values kept out of Progress and of errors (the
	// validator-manager token). The password and the wallet token always are.
	Secrets []string
	// PollInterval and Timeout bound the wait for the edit to show;
	// zero takes the defaults.
	PollInterval time.Duration
	Timeout      time.Duration
}

// Result is what a run did (or, in a dry run, would do).
type Result struct {
	File           string // the saved dump
	Bytes          int64
	MD5            string
	Pod, Container string
	// NoExec is why nothing can be copied into the pod: a dry run reports
	// it, a real run stops on it before step 1.
	NoExec              error
	PreviousMigrationID int32
	MigrationID         int32
}

// The six steps, as the procedure numbers them.
var stepTitles = [...]string{
	1: "token from the identity provider",
	2: "fetch the data snapshot",
	3: "save the data snapshot",
	4: "copy the file into the validator pod",
	5: "verify the MD5 of the copy",
	6: "edit the validator's migration",
}

// StepError is the failure of one step; the steps after it did not run.
type StepError struct {
	Step int
	Err  error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("step %d/6 (%s): %v", e.Step, stepTitles[e.Step], e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// ErrCopyMismatch is step 5's failure: the file in the pod differs from the local one.
var ErrCopyMismatch = errors.New("the copy is wrong")

// RFC 3339 in UTC only, as the validator logs print it.
var timestampPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$`)

// CheckTimestamp accepts only an RFC 3339 / ISO-8601 UTC timestamp such as
// 2025-07-01T10:30:00.000Z.
func CheckTimestamp(ts string) error {
	if !timestampPattern.MatchString(ts) {
		return fmt.Errorf("timestamp %q: want RFC 3339 UTC as in the validator logs, e.g. 2025-07-01T10:30:00.000Z", ts)
	}
	if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		return fmt.Errorf("timestamp %q: not a valid time", ts)
	}
	return nil
}

// FileName is the name of the saved dump of validator.
func FileName(validator string) string { return validator + "-domain_migration_dump.json" }

func (p *Procedure) check() error {
	var bad []string
	// A DNS label: the name is part of Kubernetes names, client ids and the file name.
	if validation.IsDNS1123Label(p.Validator) != nil {
		bad = append(bad, fmt.Sprintf("validator name %q is not a lowercase DNS label", p.Validator))
	}
	if err := CheckTimestamp(p.Timestamp); err != nil {
		bad = append(bad, err.Error())
	}
	if p.MigrationID < 0 {
		bad = append(bad, fmt.Sprintf("migration id %d is negative", p.MigrationID))
	}
	for _, u := range []struct{ name, value string }{{"identity provider URL", p.AuthURL}, {"wallet URL", p.WalletURL}} {
		parsed, err := url.Parse(u.value)
		if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
			bad = append(bad, fmt.Sprintf("%s %q is not an http(s) URL", u.name, u.value))
		}
	}
	if p.Realm == "" {
		bad = append(bad, "the realm is empty")
	}
	if p.WalletPassword == "" {
		bad = append(bad, "the wallet password is empty")
	}
	if p.Management == nil || p.Pods == nil {
		bad = append(bad, "a validator-manager client and a pod gateway are required")
	}
	if len(bad) > 0 {
		return errors.New("recovery: " + idp.Mask(strings.Join(bad, "; "), p.secrets()...))
	}
	return nil
}

// Run performs the procedure, after checks that change nothing so that a
// run that cannot finish does not start. Each failure is a *StepError.
func (p *Procedure) Run(ctx context.Context) (Result, error) {
	if err := p.check(); err != nil {
		return Result{}, err
	}
	out := &progress{w: cmp.Or[io.Writer](p.Progress, io.Discard), secrets: p.secrets()}
	dir := cmp.Or(p.OutDir, ".")
	res := Result{File: filepath.Join(dir, FileName(p.Validator))}
	if p.DryRun {
		out.linef("Dry run for validator %s at %s: nothing is written, copied or edited.", p.Validator, p.Timestamp)
	} else {
		out.linef("Recovery of validator %s at %s.", p.Validator, p.Timestamp)
	}

	// Checks ahead of the steps they belong to.
	out.start("Checking the validator in validator-manager")
	current, err := p.currentMigration(ctx)
	if err != nil {
		return res, out.fail(6, err)
	}
	res.PreviousMigrationID, res.MigrationID = current, p.MigrationID
	if res.MigrationID == 0 {
		if current == math.MaxInt32 {
			return res, out.fail(6, fmt.Errorf("the current migration id %d cannot be increased", current))
		}
		res.MigrationID = current + 1
	}
	if res.MigrationID <= current {
		return res, out.fail(6, fmt.Errorf("the new migration id %d is not greater than the current %d; nothing was changed", res.MigrationID, current))
	}
	out.done("migration %d → %d", current, res.MigrationID)

	out.start("Checking the output directory")
	if fi, err := os.Stat(dir); err != nil {
		return res, out.fail(3, fmt.Errorf("output directory: %w", err))
	} else if !fi.IsDir() {
		return res, out.fail(3, fmt.Errorf("output directory %s is not a directory", dir))
	}
	out.done("%s", res.File)

	out.start("Looking for the validator pod")
	if res.Pod, res.Container, err = p.Pods.Find(ctx, p.Validator); err != nil {
		return res, out.fail(4, err)
	}
	if res.NoExec = p.Pods.CheckExec(ctx, res.Pod); res.NoExec != nil && !p.DryRun {
		return res, out.fail(4, fmt.Errorf("%w; steps 4 and 5 cannot run, so nothing was started or changed", res.NoExec))
	}
	if res.NoExec != nil {
		out.done("pod %s, container %s; files cannot be copied into it", res.Pod, res.Container)
	} else {
		out.done("pod %s, container %s", res.Pod, res.Container)
	}

	out.step(1, "Obtaining a token from the identity provider")
	token, err := idp.PasswordToken(ctx, idp.TokenURL(p.AuthURL, p.Realm), p.Validator+"-wallet-ui", p.Validator+"_walletuser", p.WalletPassword)
	if err != nil {
		if errors.Is(err, &domain.Error{Code: domain.CodeUnauthenticated}) {
			err = fmt.Errorf("%w (check the wallet password and the realm)", err)
		}
		return res, out.fail(1, err)
	}
	out.secrets = append(out.secrets, token)
	out.done("")

	if p.DryRun {
		return res, p.dryRun(ctx, out, res)
	}

	out.step(2, "Fetching the data snapshot")
	if res.Bytes, res.MD5, err = p.fetch(ctx, out, token, res.File); err != nil {
		return res, err
	}

	out.step(4, "Copying %s into pod %s at %s", filepath.Base(res.File), res.Pod, DumpPath)
	// Found again: the pod may have been replaced during a long download.
	if res.Pod, res.Container, err = p.Pods.Find(ctx, p.Validator); err != nil {
		return res, out.fail(4, err)
	}
	if err := p.copy(ctx, res); err != nil {
		return res, out.fail(4, err)
	}
	out.done("%s", size(res.Bytes))

	out.step(5, "Verifying the MD5 of the copy")
	remote, err := p.Pods.MD5(ctx, res.Pod, res.Container, DumpPath)
	if err != nil {
		return res, out.fail(5, err)
	}
	if !strings.EqualFold(remote, res.MD5) {
		return res, out.fail(5, fmt.Errorf("%w: md5 %s in the pod, %s here; the validator was not edited, run the procedure again", ErrCopyMismatch, remote, res.MD5))
	}
	out.done("%s", res.MD5)

	out.step(6, "Setting the migration of %s to %d (migrating) and waiting", p.Validator, res.MigrationID)
	if err := p.migrate(ctx, res.MigrationID); err != nil {
		return res, out.fail(6, err)
	}
	out.done("")
	out.linef("Recovery of %s is under way: migration %d, migrating.", p.Validator, res.MigrationID)
	return res, nil
}

// dryRun checks that the wallet app answers without requesting the snapshot
// (that makes the participant export its ACS), then says what would be done.
func (p *Procedure) dryRun(ctx context.Context, out *progress, res Result) error {
	out.step(2, "Checking that the wallet app answers (the snapshot is not requested)")
	if err := p.alive(ctx); err != nil {
		return out.fail(2, err)
	}
	out.done("")
	out.linef("[3/6] Would save data_snapshot to %s (mode 0600).", res.File)
	if res.NoExec != nil {
		out.linef("[4/6] Cannot copy it into pod %s: %v.", res.Pod, res.NoExec)
		out.linef("[5/6] Cannot compare the MD5 of both files for the same reason.")
	} else {
		out.linef("[4/6] Would copy it into pod %s, container %s, at %s.", res.Pod, res.Container, DumpPath)
		out.linef("[5/6] Would compare the MD5 of both files.")
	}
	out.linef("[6/6] Would set the migration of %s to {id: %d, migrating: true} (now %d) and wait until it shows.", p.Validator, res.MigrationID, res.PreviousMigrationID)
	if res.NoExec != nil {
		out.linef("A run without --dry-run stops before step 1: steps 4 and 5 cannot run here.")
	}
	return nil
}

func (p *Procedure) copy(ctx context.Context, res Result) error {
	f, err := os.Open(res.File)
	if err != nil {
		return err
	}
	defer f.Close()
	return p.Pods.Copy(ctx, res.Pod, res.Container, DumpPath, f)
}

// secrets are the secrets that Procedure knows about before a run.
func (p *Procedure) secrets() []string {
	return append([]string{p.WalletPassword}, p.Secrets...)
}

// progress writes the steps' lines, secrets masked.
type progress struct {
	w       io.Writer
	secrets []string // the Procedure's, and the wallet token once known
	open    bool     // a line awaits done or failed
}

func (o *progress) print(s string) {
	fmt.Fprint(o.w, idp.Mask(s, o.secrets...))
}

func (o *progress) linef(format string, args ...any) {
	o.print(fmt.Sprintf(format, args...) + "\n")
}

func (o *progress) start(format string, args ...any) {
	o.print(fmt.Sprintf(format, args...) + " … ")
	o.open = true
}

func (o *progress) step(n int, format string, args ...any) {
	o.start(fmt.Sprintf("[%d/6] ", n)+format, args...)
}

func (o *progress) done(format string, args ...any) {
	detail := fmt.Sprintf(format, args...)
	if detail != "" {
		detail = " (" + detail + ")"
	}
	o.print("done" + detail + "\n")
	o.open = false
}

// fail ends the open line and returns err as step n's failure, secrets masked.
func (o *progress) fail(n int, err error) error {
	if o.open {
		o.print("failed\n")
		o.open = false
	}
	return &StepError{Step: n, Err: &masked{msg: idp.Mask(err.Error(), o.secrets...), err: err}}
}

// masked is an error's message with the secrets removed; errors.Is and As
// still see the original.
type masked struct {
	msg string
	err error
}

func (m *masked) Error() string { return m.msg }
func (m *masked) Unwrap() error { return m.err }

// size is n bytes for people.
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
