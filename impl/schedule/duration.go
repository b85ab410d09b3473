package schedule

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxDuration is the largest whole-second time.Duration, 106751d23h47m16s.
const maxDuration = time.Duration(math.MaxInt64) / time.Second * time.Second

type durationUnit struct {
	unit   byte
	length time.Duration
}

var durationUnits = []durationUnit{{'d', 24 * time.Hour}, {'h', time.Hour}, {'m', time.Minute}, {'s', time.Second}}

// ParseDuration parses maxDuration and retention: the contract's
// `^([0-9]+(d|h|m|s))+$`, with d = 24h. Parts add up in any order, as the
// pattern allows (`30m1h` is 1h30m). The result is > 0, as Canton's
// PositiveSeconds requires, and never wraps around.
func ParseDuration(s string) (time.Duration, error) {
	malformed := fmt.Errorf("duration %q: want numbers each followed by a unit d, h, m or s, e.g. 30d, 48h or 1h30m", s)
	if s == "" {
		return 0, malformed
	}
	var total time.Duration
	for rest := s; rest != ""; {
		i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if i <= 0 {
			return 0, malformed
		}
		u := slices.IndexFunc(durationUnits, func(u durationUnit) bool { return u.unit == rest[i] })
		if u < 0 {
			return 0, malformed
		}
		length := durationUnits[u].length
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil || n > int64((maxDuration-total)/length) {
			return 0, fmt.Errorf("duration %q: too long, at most %s", s, FormatDuration(maxDuration))
		}
		total += time.Duration(n) * length
		rest = rest[i+1:]
	}
	if total == 0 {
		return 0, fmt.Errorf("duration %q: must be greater than 0", s)
	}
	return total, nil
}

// FormatDuration writes d in the form ParseDuration reads, largest units
// first and zero parts left out (90s is 1m30s, 48h is 2d). It drops
// fractions of a second; anything under a second is "0s", which
// ParseDuration refuses.
func FormatDuration(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	var b strings.Builder
	for _, u := range durationUnits {
		if q := d / u.length; q > 0 {
			b.WriteString(strconv.FormatInt(int64(q), 10))
			b.WriteByte(u.unit)
			d -= q * u.length
		}
	}
	return b.String()
}
