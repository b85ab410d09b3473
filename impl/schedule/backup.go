package schedule

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/robfig/cron/v3"
)

// Backup is a parsed Kubernetes CronJob schedule, evaluated in UTC. The zero
// value never fires.
type Backup struct {
	spec *cron.SpecSchedule
}

var backupMacros = map[string]bool{
	"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true,
	"@daily": true, "@midnight": true, "@hourly": true,
}

// probe is a start from which robfig/cron's five-year search meets every
// date a schedule can match, 29 February included.
var probe = time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC)

// ParseBackup parses a backup schedule with the parser Kubernetes uses for
// spec.schedule (robfig/cron's standard parser), so the CronJob accepts what
// we accept. It is stricter in three ways: no `?`, which is Quartz syntax
// and hints at a pruning cron pasted here; no @every; and no schedule that
// matches no date (`0 0 30 2 *`). Like Kubernetes it refuses TZ=/CRON_TZ=.
func ParseBackup(expr string) (Backup, error) {
	if n := utf8.RuneCountInString(expr); n > maxCronLen {
		return Backup{}, fmt.Errorf("cron is %d characters long, at most %d are allowed", n, maxCronLen)
	}
	switch {
	case strings.Contains(expr, "TZ"): // the same test as Kubernetes' validation
		return Backup{}, fmt.Errorf("cron %q: TZ= and CRON_TZ= are not allowed; backups run in UTC", expr)
	case strings.HasPrefix(expr, "@"):
		if !backupMacros[expr] {
			return Backup{}, fmt.Errorf("cron %q: want one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or 5 fields", expr)
		}
	default:
		if n := len(strings.Fields(expr)); n != 5 {
			return Backup{}, fmt.Errorf("cron %q: want 5 fields (minute hour day-of-month month day-of-week) or a macro such as @daily, got %d", expr, n)
		}
		if strings.Contains(expr, "?") {
			return Backup{}, fmt.Errorf("cron %q: ? is Quartz syntax; a Kubernetes schedule uses * instead", expr)
		}
	}
	s, err := cron.ParseStandard(expr)
	if err != nil {
		// robfig/cron's messages read well but for a trailing strconv error.
		msg, _, _ := strings.Cut(err.Error(), ": strconv.")
		return Backup{}, fmt.Errorf("cron %q: %s", expr, msg)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok { // only @every gives another kind, and it is refused above
		return Backup{}, fmt.Errorf("cron %q: not a calendar schedule", expr)
	}
	spec.Location = time.UTC
	if spec.Next(probe).IsZero() {
		return Backup{}, fmt.Errorf("cron %q: no date matches its day-of-month and month together", expr)
	}
	return Backup{spec: spec}, nil
}

// Next returns the first fire time strictly after after, in UTC. It is zero
// only for the zero Backup, or when robfig/cron's five-year search falls
// short (29 February across 2100).
func (b Backup) Next(after time.Time) time.Time {
	if b.spec == nil {
		return time.Time{}
	}
	return b.spec.Next(after.UTC()).UTC()
}
