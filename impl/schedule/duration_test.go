package schedule

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"5m", 5 * time.Minute},
		{"48h", 48 * time.Hour},
		{"30d", 30 * 24 * time.Hour},
		{"90s", 90 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"1d12h", 36 * time.Hour},
		{"30m1h", 90 * time.Minute}, // the contract's pattern takes any order
		{"1m1m", 2 * time.Minute},
		{"0d1s", time.Second},
		{"007s", 7 * time.Second},
		{"1d2h3m4s", 26*time.Hour + 3*time.Minute + 4*time.Second},
		{"106751d23h47m16s", maxDuration},
		{"9223372036s", maxDuration},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q): got %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseDurationInvalid(t *testing.T) {
	const format = "want numbers each followed by a unit d, h, m or s, e.g. 30d, 48h or 1h30m"
	tests := []struct{ in, want string }{
		{"", `duration "": ` + format},
		{"0s", `duration "0s": must be greater than 0`},
		{"0m0s", `duration "0m0s": must be greater than 0`},
		{"0d", "must be greater than 0"},
		{"5w", `duration "5w": ` + format},
		{"5", format},
		{"m", format},
		{"5ms", format},
		{"5M", format},
		{"1.5h", format},
		{"-5m", format},
		{"+5m", format},
		{"5 m", format},
		{" 5m", format},
		{"5m ", format},
		{"1h-1m", format},
		{"PT5M", format},
		{"99999999999d", `duration "99999999999d": too long, at most 106751d23h47m16s`},
		{"106751d23h47m17s", "too long"},
		{"9223372037s", "too long"},
		{"99999999999999999999s", "too long"},
		{"106751d106751d", "too long"},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if err == nil {
			t.Errorf("ParseDuration(%q): got %v, want error %q", tt.in, got, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseDuration(%q): got error %q, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{90 * time.Second, "1m30s"},
		{48 * time.Hour, "2d"},
		{90 * time.Minute, "1h30m"},
		{25 * time.Hour, "1d1h"},
		{5 * time.Minute, "5m"},
		{86399 * time.Second, "23h59m59s"},
		{24*time.Hour + time.Second, "1d1s"},
		{time.Second + 500*time.Millisecond, "1s"},
		{maxDuration, "106751d23h47m16s"},
		{time.Duration(1<<63 - 1), "106751d23h47m16s"},
		{500 * time.Millisecond, "0s"},
		{0, "0s"},
		{-time.Hour, "0s"},
	}
	for _, tt := range tests {
		if got := FormatDuration(tt.in); got != tt.want {
			t.Errorf("FormatDuration(%v): got %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, d := range []time.Duration{time.Second, 90 * time.Second, 48 * time.Hour, 30 * 24 * time.Hour, 36*time.Hour + 7*time.Second, maxDuration} {
		if got, err := ParseDuration(FormatDuration(d)); err != nil || got != d {
			t.Errorf("ParseDuration(FormatDuration(%v)): got %v, %v", d, got, err)
		}
	}
}
