package schedule

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"
)

var (
	// newYear is a Thursday, advent a Sunday.
	newYear = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	advent  = time.Date(2026, 11, 22, 18, 36, 0, 0, time.UTC)
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// chain returns up to n fire times, each Next of the one before.
func chain(p Prune, after time.Time, n int) []string {
	var out []string
	for range n {
		next, ok := p.Next(after)
		if !ok {
			return append(out, "none")
		}
		out = append(out, next.Format(time.RFC3339))
		after = next
	}
	return out
}

func TestPruneNext(t *testing.T) {
	tests := []struct {
		expr  string
		after time.Time
		want  []string // "none" when Next reports none
	}{
		// The examples of Canton's docs.
		{"0 0 8 ? * SAT", newYear, []string{"2026-01-03T08:00:00Z", "2026-01-10T08:00:00Z"}},
		{"0 0 8 ? * SAT", advent, []string{"2026-11-28T08:00:00Z", "2026-12-05T08:00:00Z"}},
		{"0 /5 * * * ?", newYear, []string{"2026-01-01T00:05:00Z", "2026-01-01T00:10:00Z"}},
		{"0 /5 * * * ?", advent, []string{"2026-11-22T18:40:00Z", "2026-11-22T18:45:00Z"}},
		{"0 0 20 * * ?", newYear, []string{"2026-01-01T20:00:00Z", "2026-01-02T20:00:00Z"}},
		{"0 0 20 * * ?", advent, []string{"2026-11-22T20:00:00Z", "2026-11-23T20:00:00Z"}},
		{"0 30 * * * *", newYear, []string{"2026-01-01T00:30:00Z", "2026-01-01T01:30:00Z"}},
		{"0 30 * * * *", advent, []string{"2026-11-22T19:30:00Z", "2026-11-22T20:30:00Z"}},
		{"0 0 22 1 * ?", newYear, []string{"2026-01-01T22:00:00Z", "2026-02-01T22:00:00Z"}},
		{"0 0 22 1 * ?", advent, []string{"2026-12-01T22:00:00Z", "2027-01-01T22:00:00Z"}},
		{"0 0 0 31 12 ? 2025", newYear, []string{"none"}},
		{"0 0 0 31 12 ? 2025", advent, []string{"none"}},
		{"0 0 0 31 12 ? 2025", utc("2025-06-01T00:00:00Z"), []string{"2025-12-31T00:00:00Z", "none"}},
		{"0 /10 * * * ?", newYear, []string{"2026-01-01T00:10:00Z", "2026-01-01T00:20:00Z"}},
		{"0 /10 * * * ?", advent, []string{"2026-11-22T18:40:00Z", "2026-11-22T18:50:00Z"}},

		// A bare /5 is */5 and 0/5.
		{"0 */5 * * * ?", advent, []string{"2026-11-22T18:40:00Z"}},
		{"0 0/5 * * * ?", advent, []string{"2026-11-22T18:40:00Z"}},
		{"5/15 * * * * ?", newYear, []string{"2026-01-01T00:00:05Z", "2026-01-01T00:00:20Z", "2026-01-01T00:00:35Z", "2026-01-01T00:00:50Z", "2026-01-01T00:01:05Z"}},
		// * beside a set day field leaves that field in charge.
		{"0 0 8 * * SAT", newYear, []string{"2026-01-03T08:00:00Z"}},
		{"0 0 8 1 * *", advent, []string{"2026-12-01T08:00:00Z"}},
		// Quartz counts weekdays from 1 = SUN: 5 is Thursday.
		{"0 0 12 * * 5", newYear, []string{"2026-01-01T12:00:00Z", "2026-01-08T12:00:00Z"}},
		{"0 0 0 ? * sun", newYear, []string{"2026-01-04T00:00:00Z"}},
		{"0 0 12 ? * MON-FRI", utc("2026-01-02T12:00:00Z"), []string{"2026-01-05T12:00:00Z"}},
		{"0 0 0 ? * 1/2", newYear, []string{"2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-06T00:00:00Z"}},
		// Ranges wrap, as in Quartz.
		{"0 0 0 ? * FRI-MON", newYear, []string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-05T00:00:00Z", "2026-01-09T00:00:00Z"}},
		{"0 0 22-2 * * ?", newYear, []string{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T22:00:00Z"}},
		{"0 0 0 ? DEC-FEB *", utc("2026-03-01T00:00:00Z"), []string{"2026-12-01T00:00:00Z"}},
		{"0 0 0 1-5/2,20 * ?", newYear, []string{"2026-01-03T00:00:00Z", "2026-01-05T00:00:00Z", "2026-01-20T00:00:00Z"}},
		// Days a month lacks are skipped, not rolled over.
		{"0 0 0 31 * ?", advent, []string{"2026-12-31T00:00:00Z", "2027-01-31T00:00:00Z", "2027-03-31T00:00:00Z"}},
		{"0 0 0 29 2 ?", newYear, []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		// L, W and #.
		{"0 0 0 L * ?", newYear, []string{"2026-01-31T00:00:00Z", "2026-02-28T00:00:00Z"}},
		{"0 0 0 L * ?", utc("2028-02-01T00:00:00Z"), []string{"2028-02-29T00:00:00Z"}},
		{"0 0 0 L-3 * ?", newYear, []string{"2026-01-28T00:00:00Z", "2026-02-25T00:00:00Z"}},
		{"0 0 0 L-30 * ?", newYear, []string{"2026-03-01T00:00:00Z", "2026-05-01T00:00:00Z"}},
		{"0 0 0 LW * ?", newYear, []string{"2026-01-30T00:00:00Z", "2026-02-27T00:00:00Z", "2026-03-31T00:00:00Z"}},
		{"0 0 0 LW * ?", utc("2026-05-01T00:00:00Z"), []string{"2026-05-29T00:00:00Z"}},      // the 31st is a Sunday
		{"0 0 0 15W * ?", newYear, []string{"2026-01-15T00:00:00Z", "2026-02-16T00:00:00Z"}}, // 15 February is a Sunday
		{"0 0 0 1W * ?", newYear, []string{"2026-02-02T00:00:00Z", "2026-03-02T00:00:00Z"}},  // a Saturday the 1st moves to Monday
		{"0 0 0 28W 2 ?", newYear, []string{"2026-02-27T00:00:00Z"}},                         // a Saturday the 28th moves to Friday
		{"0 0 0 ? * 6L", advent, []string{"2026-11-27T00:00:00Z", "2026-12-25T00:00:00Z", "2027-01-29T00:00:00Z"}},
		{"0 0 0 ? * FRIL", newYear, []string{"2026-01-30T00:00:00Z"}},
		{"0 0 0 ? * L", newYear, []string{"2026-01-03T00:00:00Z", "2026-01-10T00:00:00Z"}}, // L alone is Saturday
		{"0 0 0 ? * 2#5", newYear, []string{"2026-03-30T00:00:00Z", "2026-06-29T00:00:00Z", "2026-08-31T00:00:00Z"}},
		{"0 0 0 ? * mon#2", newYear, []string{"2026-01-12T00:00:00Z", "2026-02-09T00:00:00Z"}},
		{"0 15 10 ? * 6L 2026-2027", advent, []string{"2026-11-27T10:15:00Z"}},
		// Years.
		{"0 0 0 * * ? 2030/2", newYear, []string{"2030-01-01T00:00:00Z"}},
		{"0 0 0 * * ? 2031/2", utc("2031-12-31T12:00:00Z"), []string{"2033-01-01T00:00:00Z"}},
		{"0 0 0 1 1 ? 2027,2029", newYear, []string{"2027-01-01T00:00:00Z", "2029-01-01T00:00:00Z", "none"}},
		{"0 0 0 * * ? *", advent, []string{"2026-11-23T00:00:00Z"}},
		{"0 0 0 1 1 ? 2099", utc("2099-01-01T00:00:00Z"), []string{"none"}},
		// Times before 1970 and far ahead.
		{"0 0 0 1 1 ? 2030", utc("1900-01-01T00:00:00Z"), []string{"2030-01-01T00:00:00Z"}},
		{"0 0 0 ? 2 MON#5", newYear, []string{"2044-02-29T00:00:00Z", "2072-02-29T00:00:00Z", "2112-02-29T00:00:00Z"}},
		{"0 0 0 1 1 ?", utc("9998-06-01T00:00:00Z"), []string{"9999-01-01T00:00:00Z"}},
	}
	for _, tt := range tests {
		p, err := ParsePrune(tt.expr)
		if err != nil {
			t.Errorf("ParsePrune(%q): %v", tt.expr, err)
			continue
		}
		if got := chain(p, tt.after, len(tt.want)); strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%q after %s: got %v, want %v", tt.expr, tt.after.Format(time.RFC3339), got, tt.want)
		}
	}
}

func TestPruneNextIsStrictlyAfterInUTC(t *testing.T) {
	p, err := ParsePrune("0 /5 * * * ?")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		after time.Time
		want  string
	}{
		{utc("2026-01-01T00:05:00Z"), "2026-01-01T00:10:00Z"},
		{utc("2026-01-01T00:04:59Z").Add(999 * time.Millisecond), "2026-01-01T00:05:00Z"},
		{utc("2026-01-01T00:05:00Z").Add(time.Nanosecond), "2026-01-01T00:10:00Z"},
	} {
		if got, _ := p.Next(tt.after); got.Format(time.RFC3339Nano) != tt.want {
			t.Errorf("Next(%s): got %s, want %s", tt.after.Format(time.RFC3339Nano), got.Format(time.RFC3339Nano), tt.want)
		}
	}

	// Local clocks and their daylight saving play no part.
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skipf("no time zone database: %v", err)
	}
	p, err = ParsePrune("0 30 2 * * ?")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		after time.Time
		want  string
	}{
		{time.Date(2026, 3, 8, 0, 0, 0, 0, ny), "2026-03-09T02:30:00Z"},  // 05:00Z, the day 02:30 local does not exist
		{time.Date(2026, 11, 1, 0, 0, 0, 0, ny), "2026-11-02T02:30:00Z"}, // 04:00Z, the day 01:00-02:00 local repeats
		{time.Date(2026, 3, 7, 21, 0, 0, 0, ny), "2026-03-08T02:30:00Z"}, // 02:00Z
	} {
		got, ok := p.Next(tt.after)
		if !ok || got.Location() != time.UTC || got.Format(time.RFC3339) != tt.want {
			t.Errorf("Next(%s): got %s (%v, %v), want %s in UTC", tt.after, got, got.Location(), ok, tt.want)
		}
	}
}

func TestPruneZeroNeverFires(t *testing.T) {
	if got, ok := (Prune{}).Next(newYear); ok {
		t.Errorf("Prune{}.Next: got %s, want none", got)
	}
}

func TestPruneCanton(t *testing.T) {
	tests := []struct{ expr, want string }{
		{"0 30 * * * *", "0 30 * * * ?"},
		{"0 0 8 * * SAT", "0 0 8 ? * SAT"},
		{"0 0 8 1 * *", "0 0 8 1 * ?"},
		{"0 0 0 * * * 2030", "0 0 0 * * ? 2030"},
		{"0 0 8 ? * SAT", "0 0 8 ? * SAT"},
		{"0 0 20 * * ?", "0 0 20 * * ?"},
		{"0 0 0 31 12 ? 2025", "0 0 0 31 12 ? 2025"},
		{" 0  0\t20 * * ? ", "0 0 20 * * ?"},
	}
	for _, tt := range tests {
		p, err := ParsePrune(tt.expr)
		if err != nil {
			t.Errorf("ParsePrune(%q): %v", tt.expr, err)
			continue
		}
		if got := p.Canton(); got != tt.want {
			t.Errorf("ParsePrune(%q).Canton(): got %q, want %q", tt.expr, got, tt.want)
		}
	}
}

func TestParsePruneInvalid(t *testing.T) {
	long := strings.Repeat("0,", 150) + "0 0 0 * * ?"
	tests := []struct{ expr, want string }{
		{"0 0 8 ? *", `cron "0 0 8 ? *": want 6 or 7 fields (sec min hour day-of-month month day-of-week [year]), got 5`},
		{"0 0 8 ? * SAT 2026 x", "got 8"},
		{"", "got 0"},
		{"every day at noon", "got 4"},
		{long, "cron is 311 characters long, at most 300 are allowed"},

		{"0 61 * * * ?", `cron "0 61 * * * ?": minute "61": 61 is out of range 0-59`},
		{"60 * * * * ?", `second "60": 60 is out of range 0-59`},
		{"0 0 24 * * ?", `hour "24": 24 is out of range 0-23`},
		{"0 0 0 32 * ?", `day-of-month "32": 32 is out of range 1-31`},
		{"0 0 0 0 * ?", `day-of-month "0": 0 is out of range 1-31`},
		{"0 0 0 ? 13 *", `month "13": 13 is out of range 1-12`},
		{"0 0 0 ? FOO *", `month "FOO": "FOO" is not a number from 1 to 12 or a name JAN-DEC`},
		{"0 0 0 ? * 0", `day-of-week "0": 0 is out of range 1-7 (1 is SUN)`},
		{"0 0 0 ? * 8", `day-of-week "8": 8 is out of range 1-7`},
		{"0 0 0 ? * MONDAY", `"MONDAY" is not a number from 1 to 7 or a name SUN-SAT`},
		{"0 0 0 * * ? 1969", `year "1969": 1969 is out of range 1970-2099`},
		{"0 0 0 * * ? 2100", `year "2100": 2100 is out of range 1970-2099`},
		{"0 0 0 * * ? 2030-2026", `year "2030-2026": range "2030-2026": start is after end`},
		{"a b c d e f", `second "a": "a" is not a number from 0 to 59`},
		{"+5 0 0 * * ?", `second "+5"`},
		{"0x 0 0 * * ?", `second "0x"`},
		{"** 0 0 * * ?", `second "**"`},
		{"0 0 0 1-5-7 * ?", `day-of-month "1-5-7"`},
		{"0 0 0 1,,2 * ?", `day-of-month "1,,2": empty list element`},
		{"0 0 0 ? * MON-7", `range "MON-7": use names or numbers on both ends`},

		{"0 /0 * * * ?", `minute "/0": step "0": want a number from 1 to 59`},
		{"0 /60 * * * ?", `minute "/60": step "60": want a number from 1 to 59`},
		{"0 0 /24 * * ?", `hour "/24": step "24": want a number from 1 to 23`},
		{"0 / * * * ?", `minute "/": step "": want a number from 1 to 59`},
		{"0 */ * * * ?", `minute "*/"`},
		{"0 0 0 ? * SUN/2", `day-of-week "SUN/2": "SUN/2": a step cannot follow a name; use numbers, e.g. 1-7/2`},
		{"0 0 0 ? JAN-MAR/2 *", `month "JAN-MAR/2": "JAN-MAR/2": a step cannot follow a name; use numbers, e.g. 1-3/2`},

		{"? 0 0 * * ?", `second "?": ? is allowed only in day-of-month or day-of-week`},
		{"0 0 0 * * ? ?", `year "?": ? is allowed only in day-of-month or day-of-week`},
		{"0 0 0 ? * ?", `cron "0 0 0 ? * ?": day-of-month and day-of-week are both ?; set one of them`},
		{"0 0 0 1 * MON", `cron "0 0 0 1 * MON": day-of-month and day-of-week are both set; put ? in one of them`},
		{"0 0 0 1-31 * 1-7", "both set"},

		{"0 0 0 L,15 * ?", `day-of-month "L,15": L and W stand alone`},
		{"0 0 0 15W,20 * ?", `day-of-month "15W,20": L and W stand alone`},
		{"0 0 0 ? * MON,6L", `day-of-week "MON,6L": L and # stand alone`},
		{"0 0 0 ? * WED,5#2", `day-of-week "WED,5#2": L and # stand alone`},
		{"0 0 0 L-31 * ?", `day-of-month "L-31": want L-n with n from 0 to 30`},
		{"0 0 0 L-3W * ?", `day-of-month "L-3W": want L-n`},
		{"0 0 0 29W * ?", `day-of-month "29W": want nW with n from 1 to 28`},
		{"0 0 0 W * ?", `day-of-month "W": want nW`},
		{"0 0 0 ? * 6#6", `day-of-week "6#6": want x#n with n from 1 to 5`},
		{"0 0 0 ? * 6#0", `want x#n with n from 1 to 5`},
		{"0 0 0 ? * 6#", `want x#n with n from 1 to 5`},
		{"0 0 0 ? * 8L", `day-of-week "8L": 8 is out of range 1-7`},

		{"0 0 0 30 2 ?", `cron "0 0 0 30 2 ?": no date matches its day-of-month, month, day-of-week and year together`},
		{"0 0 0 31 4,6,9,11 ?", "no date matches"},
		{"0 0 0 29 2 ? 2027", "no date matches"},
		{"0 0 0 L-30 FEB ?", "no date matches"},
	}
	for _, tt := range tests {
		_, err := ParsePrune(tt.expr)
		if err == nil {
			t.Errorf("ParsePrune(%q): got no error, want %q", tt.expr, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParsePrune(%q): got error %q, want it to contain %q", tt.expr, err, tt.want)
		}
	}
}

func TestParsePruneLengthLimit(t *testing.T) {
	expr := "00" + strings.Repeat(",0", 144) + " 0 0 * * ?"
	if len(expr) != maxCronLen {
		t.Fatalf("test expression is %d long, want %d", len(expr), maxCronLen)
	}
	if _, err := ParsePrune(expr); err != nil {
		t.Errorf("ParsePrune of %d characters: %v", len(expr), err)
	}
}

// TestPruneAgreesWithLog4j replays fire times computed by log4j's
// CronExpression, which Canton uses, on the Canton form of each expression;
// testdata/log4j/Oracle.java says how to regenerate them.
func TestPruneAgreesWithLog4j(t *testing.T) {
	f, err := os.Open("testdata/log4j/next.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		cols := strings.Split(sc.Text(), "\t")
		expr, canton, start, want := cols[0], cols[1], utc(cols[2]), cols[3:]
		p, err := ParsePrune(expr)
		if err != nil {
			t.Errorf("ParsePrune(%q): %v", expr, err)
			continue
		}
		if p.Canton() != canton {
			t.Errorf("ParsePrune(%q).Canton(): got %q, want %q", expr, p.Canton(), canton)
		}
		if got := chain(p, start, len(want)); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%q after %s: got %v, log4j %v", expr, cols[2], got, want)
		}
	}
	if lines < 300 {
		t.Errorf("read %d lines of next.tsv, want at least 300", lines)
	}
}

func FuzzParsePrune(f *testing.F) {
	for _, expr := range []string{
		"0 0 8 ? * SAT", "0 /5 * * * ?", "0 0 20 * * ?", "0 30 * * * *", "0 0 22 1 * ?",
		"0 0 0 31 12 ? 2025", "0 /10 * * * ?", "0 0 0 LW * ?", "0 0 0 ? * 6#3", "0 0 0 ? * FRIL",
		"0 0 22-2/2 15W DEC-FEB ? 2030/3", "0 0 0 L-3 * ?", "0 0 0 ? 2 MON#5",
	} {
		f.Add(expr, newYear.Unix())
	}
	f.Fuzz(func(t *testing.T, expr string, after int64) {
		p, err := ParsePrune(expr)
		if err != nil {
			return
		}
		at := time.Unix(after%(1<<36), 0) // years 1 to 4100
		next, ok := p.Next(at)
		if !ok {
			return
		}
		if !next.After(at) || next.Location() != time.UTC || next.Nanosecond() != 0 {
			t.Fatalf("%q: Next(%s) = %s, want a whole second after it in UTC", expr, at, next)
		}
		if again, _ := p.Next(next.Add(-time.Second)); !again.Equal(next) {
			t.Fatalf("%q: Next(%s) = %s but Next a second earlier = %s", expr, at, next, again)
		}
		q, err := ParsePrune(p.Canton())
		if err != nil {
			t.Fatalf("%q: Canton form %q does not parse: %v", expr, p.Canton(), err)
		}
		if n2, _ := q.Next(at); !n2.Equal(next) {
			t.Fatalf("%q: Canton form %q: Next = %s, want %s", expr, p.Canton(), n2, next)
		}
	})
}
