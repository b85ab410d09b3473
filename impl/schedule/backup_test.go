package schedule

import (
	"strings"
	"testing"
	"time"
)

func TestBackupNext(t *testing.T) {
	tests := []struct {
		expr  string
		after time.Time
		want  string
	}{
		{"0 0 * * *", newYear, "2026-01-02T00:00:00Z"},
		{"0 0 * * *", advent, "2026-11-23T00:00:00Z"},
		{"*/15 * * * *", newYear, "2026-01-01T00:15:00Z"},
		{"*/15 * * * *", advent, "2026-11-22T18:45:00Z"},
		{"@daily", advent, "2026-11-23T00:00:00Z"},
		{"@midnight", advent, "2026-11-23T00:00:00Z"},
		{"@hourly", advent, "2026-11-22T19:00:00Z"},
		{"@weekly", advent, "2026-11-29T00:00:00Z"}, // Sundays
		{"@monthly", advent, "2026-12-01T00:00:00Z"},
		{"@yearly", advent, "2027-01-01T00:00:00Z"},
		{"@annually", advent, "2027-01-01T00:00:00Z"},
		{"0 3 * * 1-5", advent, "2026-11-23T03:00:00Z"},
		{"0 3 * * 1-5", utc("2026-11-27T04:00:00Z"), "2026-11-30T03:00:00Z"},
		{"0 0 * JAN MON", newYear, "2026-01-05T00:00:00Z"}, // unlike Quartz, 0 or SUN is Sunday
		{"0 0 29 2 *", newYear, "2028-02-29T00:00:00Z"},
		// Kubernetes runs on the 13th or on a Friday when both are set.
		{"0 0 13 * 5", advent, "2026-11-27T00:00:00Z"},
		{"0 0 * * *", utc("2026-01-01T23:59:59Z").Add(999 * time.Millisecond), "2026-01-02T00:00:00Z"},
		{"0 0 * * *", utc("2026-01-02T00:00:00Z"), "2026-01-03T00:00:00Z"},
	}
	for _, tt := range tests {
		b, err := ParseBackup(tt.expr)
		if err != nil {
			t.Errorf("ParseBackup(%q): %v", tt.expr, err)
			continue
		}
		got := b.Next(tt.after)
		if got.Location() != time.UTC || got.Format(time.RFC3339) != tt.want {
			t.Errorf("%q after %s: got %s, want %s in UTC", tt.expr, tt.after.Format(time.RFC3339Nano), got, tt.want)
		}
	}
}

func TestBackupNextIgnoresLocalTime(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	b, err := ParseBackup("30 2 * * *")
	if err != nil {
		t.Fatal(err)
	}
	// 29 March 2026 has no 02:30 in Berlin; midnight there is 23:00Z the day before.
	if got, want := b.Next(time.Date(2026, 3, 29, 0, 0, 0, 0, berlin)), "2026-03-29T02:30:00Z"; got.Format(time.RFC3339) != want {
		t.Errorf("Next: got %s, want %s", got, want)
	}
}

func TestBackupZeroNeverFires(t *testing.T) {
	if got := (Backup{}).Next(newYear); !got.IsZero() {
		t.Errorf("Backup{}.Next: got %s, want the zero time", got)
	}
}

func TestParseBackupInvalid(t *testing.T) {
	tests := []struct{ expr, want string }{
		{"60 * * * *", `cron "60 * * * *": end of range (60) above maximum (59): 60`},
		{"0 24 * * *", "above maximum (23)"},
		{"0 0 * * 7", "above maximum (6)"},
		{"0 0 0 * * *", `cron "0 0 0 * * *": want 5 fields (minute hour day-of-month month day-of-week) or a macro such as @daily, got 6`},
		{"0 0 * *", "got 4"},
		{"", "got 0"},
		{"0 0 ? * *", `cron "0 0 ? * *": ? is Quartz syntax; a Kubernetes schedule uses * instead`},
		{"0 0 * * ?", "? is Quartz syntax"},
		{"TZ=UTC 0 0 * * *", `cron "TZ=UTC 0 0 * * *": TZ= and CRON_TZ= are not allowed; backups run in UTC`},
		{"CRON_TZ=Europe/Berlin 0 0 * * *", "TZ= and CRON_TZ= are not allowed"},
		{"TZ=UTC", "TZ= and CRON_TZ= are not allowed"},
		{"@every 1h", `cron "@every 1h": want one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or 5 fields`},
		{"@reboot", "want one of @yearly"},
		{"@DAILY", "want one of @yearly"},
		{"@daily ", "want one of @yearly"},
		{"0 0 30 2 *", `cron "0 0 30 2 *": no date matches its day-of-month and month together`},
		{"0 0 31 4,6,9,11 *", "no date matches"},
		{"a b c d e", `cron "a b c d e": failed to parse int from a`},
		{"0 0 * FOO *", `cron "0 0 * FOO *": failed to parse int from FOO`},
		{"1-2-3 * * * *", "too many hyphens"},
		{"5-1 * * * *", "beginning of range (5) beyond end of range (1)"},
		{strings.Repeat("0,", 150) + "0 * * * *", "cron is 309 characters long, at most 300 are allowed"},
	}
	for _, tt := range tests {
		_, err := ParseBackup(tt.expr)
		if err == nil {
			t.Errorf("ParseBackup(%q): got no error, want %q", tt.expr, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseBackup(%q): got error %q, want it to contain %q", tt.expr, err, tt.want)
		}
	}
}

func FuzzParseBackup(f *testing.F) {
	for _, expr := range []string{"0 0 * * *", "*/15 * * * *", "@daily", "0 3 * * 1-5", "0 0 29 2 *", "TZ=UTC 0 0 * * *"} {
		f.Add(expr)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		b, err := ParseBackup(expr)
		if err != nil {
			return
		}
		if next := b.Next(advent); !next.After(advent) {
			t.Fatalf("%q: Next(%s) = %s, want after it", expr, advent, next)
		}
	})
}
