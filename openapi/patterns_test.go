package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// contractPatterns lists every `pattern` of both served contracts, wherever
// it sits (parameters, request and response schemas), with where it is.
func contractPatterns(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, file := range []string{"management-1.11.yaml", "platform-2.0.yaml"} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		var walk func(v any, at string)
		walk = func(v any, at string) {
			switch n := v.(type) {
			case map[string]any:
				for k, e := range n {
					if p, ok := e.(string); ok && k == "pattern" {
						out[p] = append(out[p], at)
						continue
					}
					walk(e, at+"/"+k)
				}
			case []any:
				for i, e := range n {
					walk(e, fmt.Sprintf("%s/%d", at, i))
				}
			}
		}
		walk(doc, file+"#")
	}
	if len(out) < 10 {
		t.Fatalf("found %d patterns, want the contracts' (at least 10)", len(out))
	}
	return out
}

// TestPatternsUnambiguous: no unbounded quantifier of a contract's pattern
// sits inside another unbounded one unless each inner repetition is
// followed, inside the outer one, by a required character it cannot match.
// Without that the outer loop can split one input several ways, which a
// backtracking engine (generated clients and gateways in JavaScript, Java,
// Python) tries one by one: exponential time. The check is structural and
// conservative: it may refuse a linear pattern, never accepts an ambiguous
// nesting.
func TestPatternsUnambiguous(t *testing.T) {
	for p, where := range contractPatterns(t) {
		if why := ambiguousNesting(p); why != "" {
			t.Errorf("pattern %q (%s): %s", p, where[0], why)
		}
	}
}

// TestAmbiguousNestingCheck: the check refuses the nestings that backtrack
// and accepts their unambiguous rewrites.
func TestAmbiguousNestingCheck(t *testing.T) {
	for p, bad := range map[string]bool{
		`^:?(?:[a-zA-Z0-9\-_ ]+:?)*$`:                                true,
		`^:?(?:[a-zA-Z0-9\-_ ]+:)*[a-zA-Z0-9\-_ ]*$`:                 false,
		`[a-z]([-a-z0-9]*[a-z0-9])?([a-z0-9]([-a-z0-9]*[a-z0-9])?)*`: true,
		`^(a+)+$`:              true,
		`^(a*b)*$`:             false,
		`^([0-9]+(d|h|m|s))+$`: false,
		`^([0-9]+[0-9a])+$`:    true,
		`^(\s+\S+){5,6}$`:      false,
		`^(\s+\S+){5,}$`:       false,
		`^(\s*\S*)+$`:          true,
	} {
		if got := ambiguousNesting(p) != ""; got != bad {
			t.Errorf("%q: refused %v, want %v", p, got, bad)
		}
	}
}

// ambiguousNesting says why p may backtrack exponentially, or "".
func ambiguousNesting(p string) string {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return "does not parse: " + err.Error()
	}
	return nesting(re, false, nil)
}

func unbounded(re *syntax.Regexp) bool {
	return re.Op == syntax.OpStar || re.Op == syntax.OpPlus || re.Op == syntax.OpRepeat && re.Max == -1
}

// nesting walks re; inside says an enclosing unbounded quantifier exists,
// loop is what its next iteration must start with when re is its body.
func nesting(re *syntax.Regexp, inside bool, loop []rune) string {
	switch {
	case re.Op == syntax.OpCapture:
		return nesting(re.Sub[0], inside, loop)
	case re.Op == syntax.OpConcat:
		for i, sub := range re.Sub {
			if inside && unbounded(sub) {
				follow, what := loop, "the next iteration"
				if i+1 < len(re.Sub) {
					follow, what = first(re.Sub[i+1]), re.Sub[i+1].String()
				}
				if why := guarded(sub, follow, what); why != "" {
					return why
				}
				continue
			}
			if why := nesting(sub, inside, nil); why != "" {
				return why
			}
		}
		return ""
	case unbounded(re):
		if inside {
			return fmt.Sprintf("%s repeats inside another unbounded repetition with nothing after it to end it", re)
		}
		if re.Sub[0].Op == syntax.OpAlternate {
			return fmt.Sprintf("%s repeats an alternation (its branches may split an input several ways)", re)
		}
		return nesting(re.Sub[0], true, first(re.Sub[0]))
	}
	for _, sub := range re.Sub {
		if why := nesting(sub, inside, nil); why != "" {
			return why
		}
	}
	return ""
}

// guarded accepts an inner repetition of one character class when what
// follows it (follow: the ranges it must start with) is outside that class.
func guarded(inner *syntax.Regexp, follow []rune, what string) string {
	class := runes(inner.Sub[0])
	if class == nil {
		return fmt.Sprintf("%s repeats more than one character inside another unbounded repetition", inner)
	}
	if follow == nil {
		return fmt.Sprintf("%s is followed by %s, which is optional or not one character: the iterations can split an input several ways", inner, what)
	}
	for i := 0; i+1 < len(follow); i += 2 {
		for j := 0; j+1 < len(class); j += 2 {
			if follow[i] <= class[j+1] && class[j] <= follow[i+1] {
				return fmt.Sprintf("%s is followed by %s, which it can match itself", inner, what)
			}
		}
	}
	return ""
}

// runes is the character ranges re matches, when it is one character.
func runes(re *syntax.Regexp) []rune {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 1 && re.Flags&syntax.FoldCase == 0 {
			return []rune{re.Rune[0], re.Rune[0]}
		}
	case syntax.OpCharClass:
		return re.Rune
	case syntax.OpCapture:
		return runes(re.Sub[0])
	}
	return nil
}

// first is the character ranges re must start with, when it must.
func first(re *syntax.Regexp) []rune {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) > 0 && re.Flags&syntax.FoldCase == 0 {
			return []rune{re.Rune[0], re.Rune[0]}
		}
	case syntax.OpCharClass:
		return re.Rune
	case syntax.OpCapture, syntax.OpPlus:
		return first(re.Sub[0])
	case syntax.OpConcat:
		if len(re.Sub) > 0 {
			return first(re.Sub[0])
		}
	}
	return nil
}

// TestPatternsFastInNode times every contract pattern in Node's regex
// engine (what a JavaScript client or gateway validates with) on inputs
// built to make a backtracking engine try every split: runs of the
// pattern's own characters, then one it refuses. Each must finish within
// 50 ms; an exponential pattern does not finish at all and the run is cut.
func TestPatternsFastInNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed")
		}
		t.Skip("node is not installed")
	}
	type timing struct {
		Pattern string   `json:"pattern"`
		Inputs  []string `json:"inputs,omitempty"`
		Ms      float64  `json:"ms"`
	}
	patterns := contractPatterns(t)
	var cases []timing
	for p := range patterns {
		cases = append(cases, timing{Pattern: p, Inputs: attacks(p)})
	}
	in, _ := json.Marshal(cases)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/regex-timing.mjs")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v (a pattern that backtracks exponentially never finishes): %s", err, stderr.String())
	}
	var got []timing
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(cases) {
		t.Fatalf("node timed %d patterns, want %d", len(got), len(cases))
	}
	for _, g := range got {
		if g.Ms > 50 {
			t.Errorf("pattern %q (%s): %.1f ms on its worst input, want at most 50", g.Pattern, patterns[g.Pattern][0], g.Ms)
		}
	}
}

// attacks builds a pattern's candidate worst-case inputs: every pair of
// characters the pattern names (one of each class and literal), repeated to
// 1,000 characters, then ended by a character it may refuse.
func attacks(p string) []string {
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return nil
	}
	samples := []rune{'a', '0', ' ', ':'}
	var collect func(*syntax.Regexp)
	collect = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpLiteral:
			samples = append(samples, r.Rune...)
		case syntax.OpCharClass:
			for i := 0; i+1 < len(r.Rune); i += 2 {
				samples = append(samples, r.Rune[i], r.Rune[i+1])
			}
		}
		for _, s := range r.Sub {
			collect(s)
		}
	}
	collect(re)
	var ok []rune
	for _, r := range samples {
		if r >= 0x20 && r < 0x7f && !slices.Contains(ok, r) {
			ok = append(ok, r)
		}
	}
	var out []string
	for _, a := range ok {
		for _, b := range ok {
			run := strings.Repeat(string([]rune{a, b}), 500)
			for _, end := range []string{"\u0000", "!", "::", "\n"} {
				out = append(out, run+end)
			}
		}
	}
	return out
}

// TestPatternRewritesSameLanguage: each pattern rewritten to be linear
// accepts exactly what the ambiguous one accepted (Go's engine runs both
// in linear time), on every string up to 6 characters of their alphabet
// and on random longer ones; the rewrite is the one the contract holds.
func TestPatternRewritesSameLanguage(t *testing.T) {
	patterns := contractPatterns(t)
	for _, rw := range []struct{ was, now, alphabet string }{
		{`^:?(?:[a-zA-Z0-9\-_ ]+:?)*$`, `^:?(?:[a-zA-Z0-9\-_ ]+:)*[a-zA-Z0-9\-_ ]*$`, "a:_ -!"},
		{`^:?(?:[a-zA-Z0-9\-_]+:?)*$`, `^:?(?:[a-zA-Z0-9\-_]+:)*[a-zA-Z0-9\-_]*$`, "a:_ -!"},
	} {
		if _, ok := patterns[rw.now]; !ok {
			t.Errorf("the contracts do not hold %q", rw.now)
		}
		if _, ok := patterns[rw.was]; ok {
			t.Errorf("the contracts still hold %q", rw.was)
		}
		was, now := regexp.MustCompile(rw.was), regexp.MustCompile(rw.now)
		check := func(s string) {
			if was.MatchString(s) != now.MatchString(s) {
				t.Errorf("%q: %q says %v, %q says %v", s, rw.was, was.MatchString(s), rw.now, now.MatchString(s))
			}
		}
		var all func(prefix string, n int)
		all = func(prefix string, n int) {
			check(prefix)
			if n == 0 {
				return
			}
			for _, r := range rw.alphabet {
				all(prefix+string(r), n-1)
			}
		}
		all("", 6)
		rnd := rand.New(rand.NewPCG(1, 2))
		for range 20000 {
			b := make([]byte, rnd.IntN(40))
			for i := range b {
				b[i] = rw.alphabet[rnd.IntN(len(rw.alphabet))]
			}
			check(string(b))
		}
	}
}
