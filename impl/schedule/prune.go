package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	// maxCronLen is Canton's limit on the pruning cron.
	maxCronLen = 300
	// Quartz takes years from 1970 to a century after today; a fixed 2099
	// keeps what we accept acceptable to Canton. A year step such as */5
	// stops at 2099 here and goes on in Quartz: Next differs after 2099 only.
	minYear, maxYear = 1970, 2099
	// The Gregorian calendar repeats every 400 years, so an expression without
	// a year that matches nothing in 400 years never matches.
	calendarCycle = 400
)

// Prune is a parsed Canton pruning cron (log4j/Quartz CronExpression),
// evaluated in UTC. The zero value never fires.
type Prune struct {
	second, minute, hour bitset // bit v for value v
	month                bitset // bit m-1 for month m
	year                 bitset // bit y-minYear; ignored when anyYear
	anyYear              bool
	day                  dayRule
	canton               string
}

// ParsePrune parses a pruning cron: `sec min hour day-of-month month
// day-of-week [year]` with Quartz's `*`, `?`, `,`, `-`, `/` (a bare `/5` is
// `*/5`), names, `L`, `W` and `#`.
//
// It takes only what log4j, Canton's parser, reads in full, so that Next is
// what Canton does: log4j silently drops parts of `SUN/2`, `15W,20`,
// `WED,5#2` or an eighth field, and these are refused. One relaxation: `*`
// may stand in both day fields (`0 30 * * * *`, an example of Canton's docs
// that log4j refuses) or beside a set one; the Canton method gives the form
// log4j takes. An expression that matches no date (`0 0 0 30 2 ?`) is
// refused; one whose years are over (`0 0 0 31 12 ? 2025`) is not.
func ParsePrune(expr string) (Prune, error) {
	if n := utf8.RuneCountInString(expr); n > maxCronLen {
		return Prune{}, fmt.Errorf("cron is %d characters long, at most %d are allowed", n, maxCronLen)
	}
	tokens := strings.Fields(expr)
	if len(tokens) != 6 && len(tokens) != 7 {
		return Prune{}, fmt.Errorf("cron %q: want 6 or 7 fields (sec min hour day-of-month month day-of-week [year]), got %d", expr, len(tokens))
	}
	fail := func(f field, tok string, err error) error {
		return fmt.Errorf("cron %q: %s %q: %w", expr, f.name, tok, err)
	}
	year := "*"
	if len(tokens) == 7 {
		year = tokens[6]
	}
	p := Prune{anyYear: year == "*"}
	for _, x := range []struct {
		f   field
		tok string
		dst *bitset
	}{
		{secondField, tokens[0], &p.second},
		{minuteField, tokens[1], &p.minute},
		{hourField, tokens[2], &p.hour},
		{monthField, tokens[4], &p.month},
		{yearField, year, &p.year},
	} {
		set, err := x.f.parse(x.tok)
		if err != nil {
			return Prune{}, fail(x.f, x.tok, err)
		}
		*x.dst = set
	}

	dom, dow := tokens[3], tokens[5]
	switch {
	case dom == "?" && dow == "?":
		return Prune{}, fmt.Errorf("cron %q: day-of-month and day-of-week are both ?; set one of them", expr)
	case dom != "?" && dom != "*" && dow != "?" && dow != "*":
		return Prune{}, fmt.Errorf("cron %q: day-of-month and day-of-week are both set; put ? in one of them", expr)
	}
	// Parse both for their errors; the one that is not ? or * rules.
	domRule, err := parseDayOfMonth(dom)
	if err != nil {
		return Prune{}, fail(domField, tokens[3], err)
	}
	dowRule, err := parseDayOfWeek(dow)
	if err != nil {
		return Prune{}, fail(dowField, tokens[5], err)
	}
	p.day = domRule
	if dom == "?" || dom == "*" {
		p.day = dowRule
	}

	// log4j wants exactly one ? among the day fields; give it the field that
	// does not rule (day-of-week when both are *).
	canton := append([]string(nil), tokens...)
	switch {
	case dow == "*" && dom != "?":
		canton[5] = "?"
	case dom == "*" && dow != "?":
		canton[3] = "?"
	}
	p.canton = strings.Join(canton, " ")

	if _, ok := p.Next(time.Date(minYear-1, 12, 31, 23, 59, 59, 0, time.UTC)); !ok {
		return Prune{}, fmt.Errorf("cron %q: no date matches its day-of-month, month, day-of-week and year together", expr)
	}
	return p, nil
}

// Canton returns the expression in the form Canton's parser takes: single
// spaces and exactly one ? among the day fields, with the same fire times.
func (p Prune) Canton() string { return p.canton }

// Next returns the first fire time strictly after after, in UTC, and false
// when there is none (every year of the expression is over).
func (p Prune) Next(after time.Time) (time.Time, bool) {
	t := after.UTC().Truncate(time.Second).Add(time.Second)
	year, month, day := t.Date()
	h, mi, s := t.Clock()
	last := year + calendarCycle
	if !p.anyYear {
		first := p.year.next(0)
		if first < 0 {
			return time.Time{}, false
		}
		if year < minYear+first {
			year, month, day, h, mi, s = minYear+first, time.January, 1, 0, 0, 0
		}
		last = minYear + p.year.last()
	}
	for ; year <= last; year++ {
		if p.anyYear || p.year.has(year-minYear) {
			for ; month <= time.December; month++ {
				if p.month.has(int(month) - 1) {
					days := p.day.days(year, month)
					for ; day <= 31; day++ {
						if days&(1<<day) != 0 {
							if hh, mm, ss, ok := p.clock(h, mi, s); ok {
								return time.Date(year, month, day, hh, mm, ss, 0, time.UTC), true
							}
						}
						h, mi, s = 0, 0, 0
					}
				}
				day, h, mi, s = 1, 0, 0, 0
			}
		}
		month, day, h, mi, s = time.January, 1, 0, 0, 0
	}
	return time.Time{}, false
}

// clock returns the first time of day at or after h:m:s that the expression
// matches.
func (p Prune) clock(h, m, s int) (int, int, int, bool) {
	for hh := p.hour.next(h); hh >= 0; hh = p.hour.next(hh + 1) {
		m0 := 0
		if hh == h {
			m0 = m
		}
		for mm := p.minute.next(m0); mm >= 0; mm = p.minute.next(mm + 1) {
			s0 := 0
			if hh == h && mm == m {
				s0 = s
			}
			if ss := p.second.next(s0); ss >= 0 {
				return hh, mm, ss, true
			}
		}
	}
	return 0, 0, 0, false
}

// field describes one numeric cron field; its sets hold bit v-lo for value v.
type field struct {
	name   string
	lo, hi int
	names  []string // names[i] stands for lo+i
	// maxStep is Quartz's bound on an increment.
	maxStep int
	// cyclic fields take wrapping ranges such as 22-2 or FRI-MON, as Quartz does.
	cyclic bool
}

var (
	monthNames = []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	dayNames   = []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}

	secondField = field{name: "second", lo: 0, hi: 59, maxStep: 59, cyclic: true}
	minuteField = field{name: "minute", lo: 0, hi: 59, maxStep: 59, cyclic: true}
	hourField   = field{name: "hour", lo: 0, hi: 23, maxStep: 23, cyclic: true}
	domField    = field{name: "day-of-month", lo: 1, hi: 31, maxStep: 31, cyclic: true}
	monthField  = field{name: "month", lo: 1, hi: 12, names: monthNames, maxStep: 12, cyclic: true}
	dowField    = field{name: "day-of-week", lo: 1, hi: 7, names: dayNames, maxStep: 7, cyclic: true}
	yearField   = field{name: "year", lo: minYear, hi: maxYear, maxStep: maxYear - minYear}
)

// parse reads a list of `*`, values, ranges and steps.
func (f field) parse(tok string) (bitset, error) {
	var set bitset
	if tok == "?" {
		return set, errors.New("? is allowed only in day-of-month or day-of-week")
	}
	for _, elem := range strings.Split(tok, ",") {
		if err := f.parseElem(elem, &set); err != nil {
			return bitset{}, err
		}
	}
	return set, nil
}

func (f field) parseElem(elem string, set *bitset) error {
	if elem == "" {
		return errors.New("empty list element")
	}
	rng, stepText, hasStep := strings.Cut(elem, "/")
	step := 1
	if hasStep {
		n, ok := number(stepText)
		if !ok || n < 1 || n > f.maxStep {
			return fmt.Errorf("step %q: want a number from 1 to %d", stepText, f.maxStep)
		}
		step = n
	}
	var from, to int
	switch {
	case rng == "*" || rng == "" && hasStep: // Quartz reads a bare /5 as */5
		from, to = f.lo, f.hi
	case strings.Contains(rng, "-"):
		a, b, _ := strings.Cut(rng, "-")
		var err error
		if from, err = f.value(a); err != nil {
			return err
		}
		if to, err = f.value(b); err != nil {
			return err
		}
		if isName(a) != isName(b) {
			return fmt.Errorf("range %q: use names or numbers on both ends", rng)
		}
		if from > to && !f.cyclic {
			return fmt.Errorf("range %q: start is after end", rng)
		}
	default:
		var err error
		if from, err = f.value(rng); err != nil {
			return err
		}
		to = from
		if hasStep {
			to = f.hi
		}
	}
	// log4j drops a step that follows a name; refuse rather than differ.
	if hasStep && isName(rng) {
		return fmt.Errorf("%q: a step cannot follow a name; use numbers, e.g. %d-%d/%d", elem, from, to, step)
	}
	span := f.hi - f.lo + 1
	n := to - from
	if n < 0 {
		n += span
	}
	for i := 0; i <= n; i += step {
		v := from + i
		if v > f.hi {
			v -= span
		}
		set.set(v - f.lo)
	}
	return nil
}

// value reads one number or name of the field.
func (f field) value(s string) (int, error) {
	if n, ok := number(s); ok {
		if n < f.lo || n > f.hi {
			return 0, fmt.Errorf("%s is out of range %d-%d%s", s, f.lo, f.hi, f.hint())
		}
		return n, nil
	}
	if i := slices.Index(f.names, asciiUpper(s)); i >= 0 {
		return f.lo + i, nil
	}
	if len(f.names) > 0 {
		return 0, fmt.Errorf("%q is not a number from %d to %d or a name %s-%s", s, f.lo, f.hi, f.names[0], f.names[len(f.names)-1])
	}
	return 0, fmt.Errorf("%q is not a number from %d to %d", s, f.lo, f.hi)
}

// hint reminds users of Unix cron that Quartz counts weekdays from 1.
func (f field) hint() string {
	if f.name == dowField.name {
		return " (1 is SUN)"
	}
	return ""
}

// number reads a plain decimal: no sign, at most 4 digits, so no overflow.
func number(s string) (int, bool) {
	if s == "" || len(s) > 4 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func isName(s string) bool {
	return s != "" && (s[0]|0x20) >= 'a' && (s[0]|0x20) <= 'z'
}

// asciiUpper upper-cases like Quartz but keeps byte offsets, so that
// substrings of the original can be shown in errors.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

type dayKind uint8

const (
	everyDay       dayKind = iota
	monthDays              // set holds bit d-1 for day d
	lastDay                // L, L-n: n days before the last day
	lastWorkday            // LW
	nearestWorkday         // nW: Monday to Friday nearest to day n, same month
	weekdays               // set holds bit w for time.Weekday w
	lastWeekday            // xL: last weekday wd of the month
	nthWeekday             // x#n: n-th weekday wd of the month
)

// dayRule is whichever of day-of-month and day-of-week is not ? or *.
type dayRule struct {
	kind dayKind
	set  bitset
	n    int
	wd   time.Weekday
}

func parseDayOfMonth(tok string) (dayRule, error) {
	u := asciiUpper(tok)
	switch {
	case u == "?" || u == "*":
		return dayRule{kind: everyDay}, nil
	case u == "L":
		return dayRule{kind: lastDay}, nil
	case u == "LW":
		return dayRule{kind: lastWorkday}, nil
	case strings.HasPrefix(u, "L-"):
		n, ok := number(u[2:])
		if !ok || n > 30 {
			return dayRule{}, errors.New("want L-n with n from 0 to 30 (days before the last day)")
		}
		return dayRule{kind: lastDay, n: n}, nil
	case strings.HasSuffix(u, "W") && !strings.ContainsAny(u, ",-/*"):
		// log4j misplaces nW in months shorter than n; 28 fits every month.
		n, ok := number(strings.TrimSuffix(u, "W"))
		if !ok || n < 1 || n > 28 {
			return dayRule{}, errors.New("want nW with n from 1 to 28 (the weekday nearest to day n); LW is the last weekday")
		}
		return dayRule{kind: nearestWorkday, n: n}, nil
	case strings.ContainsAny(u, "LW"):
		return dayRule{}, errors.New("L and W stand alone: L, L-n, LW or nW, not in a list, range or step")
	}
	set, err := domField.parse(tok)
	return dayRule{kind: monthDays, set: set}, err
}

func parseDayOfWeek(tok string) (dayRule, error) {
	u := asciiUpper(tok)
	switch {
	case u == "?" || u == "*":
		return dayRule{kind: everyDay}, nil
	case strings.ContainsAny(u, ",-/*") && strings.ContainsAny(u, "L#"):
		return dayRule{}, errors.New("L and # stand alone: xL or x#n, not in a list, range or step")
	case u == "L": // Quartz: L alone in day-of-week is 7, Saturday
		return dayRule{kind: weekdays, set: bitset{1 << time.Saturday}}, nil
	case strings.HasSuffix(u, "L"):
		v, err := dowField.value(tok[:len(tok)-1])
		if err != nil {
			return dayRule{}, err
		}
		return dayRule{kind: lastWeekday, wd: time.Weekday(v - 1)}, nil
	case strings.Contains(u, "#"):
		d, nth, _ := strings.Cut(tok, "#")
		v, err := dowField.value(d)
		if err != nil {
			return dayRule{}, err
		}
		n, ok := number(nth)
		if !ok || n < 1 || n > 5 {
			return dayRule{}, errors.New("want x#n with n from 1 to 5 (the n-th such day of the month)")
		}
		return dayRule{kind: nthWeekday, wd: time.Weekday(v - 1), n: n}, nil
	}
	set, err := dowField.parse(tok)
	return dayRule{kind: weekdays, set: set}, err
}

// days returns the days of the month the rule matches, bit d for day d.
func (r dayRule) days(year int, month time.Month) uint64 {
	last := time.Date(year, month+1, 0, 0, 0, 0, 0, time.UTC).Day()
	first := time.Date(year, month, 1, 0, 0, 0, 0, time.UTC).Weekday()
	weekday := func(d int) time.Weekday { return (first + time.Weekday(d-1)) % 7 }
	all := uint64(1)<<(last+1) - 2
	switch r.kind {
	case everyDay:
		return all
	case monthDays:
		return r.set[0] << 1 & all
	case lastDay:
		if d := last - r.n; d >= 1 {
			return 1 << d
		}
	case lastWorkday:
		d := last
		switch weekday(d) {
		case time.Saturday:
			d--
		case time.Sunday:
			d -= 2
		}
		return 1 << d
	case nearestWorkday:
		d := r.n
		switch weekday(d) {
		case time.Saturday:
			if d == 1 {
				d = 3
			} else {
				d--
			}
		case time.Sunday:
			if d == last {
				d -= 2
			} else {
				d++
			}
		}
		return 1 << d
	case weekdays:
		var mask uint64
		for d := 1; d <= last; d++ {
			if r.set.has(int(weekday(d))) {
				mask |= 1 << d
			}
		}
		return mask
	case lastWeekday:
		return 1 << (last - int((weekday(last)-r.wd+7)%7))
	case nthWeekday:
		if d := 1 + int((r.wd-first+7)%7) + 7*(r.n-1); d <= last {
			return 1 << d
		}
	}
	return 0
}

// bitset is a set of small non-negative integers (below 192).
type bitset [3]uint64

func (b *bitset) set(i int) { b[i/64] |= 1 << (i % 64) }

func (b bitset) has(i int) bool {
	return i >= 0 && i < 64*len(b) && b[i/64]&(1<<(i%64)) != 0
}

// next returns the smallest member >= i, or -1.
func (b bitset) next(i int) int {
	for i = max(i, 0); i < 64*len(b); i++ {
		if b.has(i) {
			return i
		}
	}
	return -1
}

// last returns the largest member, or -1.
func (b bitset) last() int {
	i := 64*len(b) - 1
	for i >= 0 && !b.has(i) {
		i--
	}
	return i
}
