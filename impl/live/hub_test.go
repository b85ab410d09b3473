package live_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/live"
)

func change(name string, v uint64) live.Change {
	return live.Change{Name: name, Version: v, Data: []byte(fmt.Sprintf(`{"name":%q}`, name))}
}

func gone(name string, v uint64) live.Change {
	c := change(name, v)
	c.Deleted = true
	return c
}

// got lists a catch-up as name@version (deletions -name@version).
func got(cu live.Catchup) []string {
	var out []string
	for _, c := range cu.Changes {
		s := fmt.Sprintf("%s@%d", c.Name, c.Version)
		if c.Deleted {
			s = "-" + s
		}
		out = append(out, s)
	}
	return out
}

func ptr(v uint64) *uint64 { return &v }

// synced is a Hub after its source's first sync (a, b, c), plus the changes
// after it.
func synced(after ...live.Change) *live.Hub {
	h := live.New(live.Options{Tombstones: 2})
	for _, c := range []live.Change{change("a", 3), change("b", 5), change("c", 4)} {
		h.Publish(c)
	}
	h.Ready()
	for _, c := range after {
		h.Publish(c)
	}
	return h
}

func TestCatchup(t *testing.T) {
	for _, c := range []struct {
		what      string
		after     []live.Change
		name      string
		since     *uint64
		wantReset bool
		want      []string
	}{
		{what: "first connection: everything, by version", want: []string{"a@3", "c@4", "b@5"}},
		{what: "one name", name: "c", want: []string{"c@4"}},
		{what: "resume with no change since start: reset", since: ptr(5), wantReset: true, want: []string{"a@3", "c@4", "b@5"}},
		{what: "resume after a change: what changed since, deletions too",
			after: []live.Change{change("a", 6), gone("b", 7), change("d", 8)}, since: ptr(6),
			want: []string{"-b@7", "d@8"}},
		{what: "resume at the first change after start",
			after: []live.Change{change("a", 6), change("c", 9)}, since: ptr(6), want: []string{"c@9"}},
		{what: "resume from before the first change after start: reset",
			after: []live.Change{change("a", 6)}, since: ptr(5), wantReset: true, want: []string{"c@4", "b@5", "a@6"}},
		{what: "resume from before a dropped deletion: reset (2 kept)",
			after: []live.Change{change("x", 6), gone("a", 7), gone("b", 8), gone("c", 9)}, since: ptr(6), wantReset: true,
			want: []string{"x@6"}},
		{what: "resume after the dropped deletion: the kept ones",
			after: []live.Change{change("x", 6), gone("a", 7), gone("b", 8), gone("c", 9)}, since: ptr(7),
			want: []string{"-b@8", "-c@9"}},
		{what: "resume of one name", after: []live.Change{change("a", 6), change("b", 7)}, name: "b", since: ptr(6),
			want: []string{"b@7"}},
	} {
		t.Run(c.what, func(t *testing.T) {
			h := synced(c.after...)
			sub, cu, err := h.Subscribe(c.name, c.since)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			if cu.Reset != c.wantReset || !slices.Equal(got(cu), c.want) {
				t.Fatalf("got reset %v %v, want reset %v %v", cu.Reset, got(cu), c.wantReset, c.want)
			}
		})
	}
}

func TestUnknownDeletionResets(t *testing.T) {
	h := synced(change("a", 6))
	h.Unknown(change("b", 0))
	_, cu, err := h.Subscribe("", ptr(6))
	if err != nil {
		t.Fatal(err)
	}
	if !cu.Reset || !slices.Equal(got(cu), []string{"a@6", "c@4"}) && !slices.Equal(got(cu), []string{"c@4", "a@6"}) {
		t.Fatalf("got reset %v %v, want a reset to c@4, a@6", cu.Reset, got(cu))
	}
	// The next change ends the uncertainty for those who saw it.
	h.Publish(change("c", 10))
	if _, cu, _ = h.Subscribe("", ptr(10)); cu.Reset || len(cu.Changes) != 0 {
		t.Fatalf("after the next change: got reset %v %v, want nothing", cu.Reset, got(cu))
	}
}

func TestNotReady(t *testing.T) {
	h := live.New(live.Options{})
	if _, _, err := h.Subscribe("", nil); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("before Ready: got %v, want unavailable", err)
	}
	h.Ready()
	h.Close()
	if _, _, err := h.Subscribe("", nil); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("after Close: got %v, want unavailable", err)
	}
}

func TestLiveChanges(t *testing.T) {
	h := synced()
	all, _, _ := h.Subscribe("", nil)
	onlyB, _, _ := h.Subscribe("b", nil)
	h.Publish(change("a", 6))
	h.Publish(gone("b", 7))
	if c := <-all.Changes(); c.Name != "a" || c.Version != 6 {
		t.Fatalf("got %s@%d, want a@6", c.Name, c.Version)
	}
	if c := <-all.Changes(); c.Name != "b" || !c.Deleted {
		t.Fatalf("got %s deleted=%v, want b deleted", c.Name, c.Deleted)
	}
	if c := <-onlyB.Changes(); c.Name != "b" || len(onlyB.Changes()) != 0 {
		t.Fatalf("filtered: got %s and %d more, want b only", c.Name, len(onlyB.Changes()))
	}
	all.Close()
	if n := h.Watchers(); n != 1 {
		t.Fatalf("after a watcher left: got %d watchers, want 1", n)
	}
}

func TestSlowWatcherIsCut(t *testing.T) {
	h := live.New(live.Options{Buffer: 2})
	h.Ready()
	slow, _, _ := h.Subscribe("", nil)
	fast, _, _ := h.Subscribe("", nil)
	for v := uint64(1); v <= 3; v++ {
		h.Publish(change("a", v))
		<-fast.Changes()
	}
	select {
	case <-slow.Done():
	default:
		t.Fatal("a watcher with 3 unread changes and a buffer of 2 is not cut")
	}
	if !errors.Is(slow.Err(), live.ErrSlow) {
		t.Fatalf("got %v, want ErrSlow", slow.Err())
	}
	select {
	case <-fast.Done():
		t.Fatal("the watcher that reads was cut too")
	default:
	}
	h.Close()
	<-fast.Done()
	if !errors.Is(fast.Err(), live.ErrShutdown) || h.Watchers() != 0 {
		t.Fatalf("after Close: got %v and %d watchers, want ErrShutdown and none", fast.Err(), h.Watchers())
	}
}

// TestEncodedWhenSent: a Hub keeps a validator's state as the Encode it
// was given, not as bytes: nothing is encoded while nobody watches; a
// change is encoded once for all its watchers; a catch-up's entries are
// encoded when read; a deletion is encoded at once and keeps no Encode
// (which would hold the deleted object).
func TestEncodedWhenSent(t *testing.T) {
	calls := map[string]int{}
	state := func(name string, v uint64, deleted bool) live.Change {
		return live.Change{Name: name, Version: v, Deleted: deleted, Encode: func() []byte {
			calls[name]++
			return []byte(fmt.Sprintf(`{"name":%q,"v":%d}`, name, v))
		}}
	}
	h := live.New(live.Options{})
	h.Publish(state("a", 1, false))
	h.Publish(state("b", 2, false))
	h.Ready()
	if calls["a"]+calls["b"] != 0 {
		t.Fatalf("encoded with nobody watching: %v", calls)
	}
	s1, cu, err := h.Subscribe("", nil)
	if err != nil {
		t.Fatal(err)
	}
	s2, _, err := h.Subscribe("a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cu.Changes) != 2 || string(cu.Changes[0].JSON()) != `{"name":"a","v":1}` || calls["a"] != 1 {
		t.Fatalf("catch-up: %v, encodes %v", got(cu), calls)
	}
	h.Publish(state("a", 3, false))
	c1, c2 := <-s1.Changes(), <-s2.Changes()
	if c1 != c2 || string(c1.JSON()) != `{"name":"a","v":3}` || calls["a"] != 2 {
		t.Errorf("a change sent to two watchers: %q and %q, encodes %v; want one encoding shared", c1.JSON(), c2.JSON(), calls)
	}
	h.Publish(state("b", 4, true))
	if calls["b"] != 1 {
		t.Errorf("a deletion encoded %d times at publish, want once", calls["b"])
	}
	<-s1.Changes()
	_, cu, err = h.Subscribe("b", ptr(3))
	if err != nil {
		t.Fatal(err)
	}
	if len(cu.Changes) != 1 || !cu.Changes[0].Deleted || cu.Changes[0].Encode != nil || string(cu.Changes[0].Data) != `{"name":"b","v":4}` || calls["b"] != 1 {
		t.Errorf("the deletion kept: %+v, encodes %v; want its JSON and no Encode", cu.Changes, calls)
	}
}
