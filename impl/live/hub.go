// Package live fans validators' status changes out to the watch streams: a
// Hub keeps each validator's latest state and the recent deletions, so that
// a watcher that reconnects gets what changed since; one that does not read
// is cut, never buffered without limit.
package live

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"sync"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// Change is one validator's new state at resource version Version.
type Change struct {
	Name    string
	Version uint64
	Deleted bool
	// Data is the event's JSON, or nil: Encode makes it when sent, so the
	// streams keep no second copy of the cache's objects (a deletion's at once).
	Data   []byte
	Encode func() []byte
}

// JSON is the event's JSON.
func (c *Change) JSON() []byte {
	if c.Data != nil || c.Encode == nil {
		return c.Data
	}
	return c.Encode()
}

// encoded is c with its JSON made.
func (c Change) encoded() *Change {
	c.Data, c.Encode = c.JSON(), nil
	return &c
}

// Why a subscription ended.
var (
	ErrShutdown = errors.New("shutdown")
	ErrSlow     = errors.New("slow")
)

// Options bound a Hub's memory.
type Options struct {
	// Buffer is how many changes a watcher may leave unread before it is cut; default 16.
	Buffer int
	// Tombstones is how many deletions are kept for watchers that resume;
	// one resuming from before the oldest gets a reset; default 1024.
	Tombstones int
}

// Hub is the fan-out of one release's events.
type Hub struct {
	opts Options

	mu      sync.Mutex
	ready   bool
	closed  bool
	entries map[string]*Change
	tombs   []*Change // oldest first
	// floor: a watcher resuming from below it cannot be told what changed
	// and gets a reset; so does every one while floorPending.
	floor        uint64
	floorPending bool
	latest       uint64
	subs         map[*Subscription]struct{}
}

// New returns a Hub that serves nobody until Ready.
func New(o Options) *Hub {
	o.Buffer, o.Tombstones = cmp.Or(o.Buffer, 16), cmp.Or(o.Tombstones, 1024)
	return &Hub{opts: o, entries: map[string]*Change{}, subs: map[*Subscription]struct{}{}, floor: math.MaxUint64, floorPending: true}
}

// Ready says the Hub holds every validator (its source has synced).
func (h *Hub) Ready() {
	h.mu.Lock()
	h.ready = true
	h.mu.Unlock()
}

// Publish records c and sends it to its watchers, cutting one whose buffer is full (ErrSlow).
func (h *Hub) Publish(c Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.publish(c)
}

// Unknown records that c.Name was deleted at a version nobody knows (found
// on a relist): any resumption from before the next change resets.
func (h *Hub) Unknown(c Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c.Version, c.Deleted = h.latest, true
	h.publish(c)
	h.floor, h.floorPending = math.MaxUint64, true
}

func (h *Hub) publish(c Change) {
	if h.closed {
		return
	}
	if h.floorPending && h.ready {
		h.floor, h.floorPending = c.Version, false
	}
	h.latest = max(h.latest, c.Version)
	if c.Deleted {
		c = *c.encoded()
		delete(h.entries, c.Name)
		h.tombs = append(h.tombs, &c)
		if over := len(h.tombs) - h.opts.Tombstones; over > 0 {
			// A watcher that missed a dropped deletion cannot be told it.
			h.floor = max(h.floor, h.tombs[over-1].Version)
			h.tombs = slices.Delete(h.tombs, 0, over)
		}
	} else {
		h.entries[c.Name] = &c
	}
	var sent *Change // encoded once for every watcher
	for s := range h.subs {
		if s.name != "" && s.name != c.Name {
			continue
		}
		if sent == nil {
			sent = c.encoded()
		}
		select {
		case s.c <- sent:
		default:
			h.end(s, ErrSlow)
		}
	}
}

// Close ends every subscription (ErrShutdown) and refuses new ones.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		h.end(s, ErrShutdown)
	}
}

// Subscription is one watcher.
type Subscription struct {
	hub  *Hub
	name string
	c    chan *Change
	done chan struct{}
	err  error
}

// Catchup is what a new watcher is sent before live changes.
type Catchup struct {
	// Reset: the position cannot be resumed from; Changes is then every validator.
	Reset   bool
	Changes []*Change // by version
	// Latest is the highest version the Hub has seen.
	Latest uint64
}

// Subscribe starts a watcher of name ("": all) since the version of its last
// event (nil: none); no change falls between the catch-up and the live ones.
func (h *Hub) Subscribe(name string, since *uint64) (*Subscription, Catchup, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return nil, Catchup{}, domain.Unavailable("the server is shutting down")
	case !h.ready:
		return nil, Catchup{}, domain.Unavailable("the validators' cache has not synced yet")
	}
	var cu Catchup
	from := uint64(0)
	if since != nil {
		if *since < h.floor {
			cu.Reset = true
		} else {
			from = *since
		}
	}
	wanted := func(c *Change) bool { return c.Version > from && (name == "" || c.Name == name) }
	for _, c := range h.entries {
		if wanted(c) {
			cu.Changes = append(cu.Changes, c)
		}
	}
	for _, c := range h.tombs {
		if from > 0 && wanted(c) {
			cu.Changes = append(cu.Changes, c)
		}
	}
	slices.SortFunc(cu.Changes, func(a, b *Change) int {
		return cmp.Or(cmp.Compare(a.Version, b.Version), cmp.Compare(a.Name, b.Name))
	})
	cu.Latest = h.latest
	s := &Subscription{hub: h, name: name, c: make(chan *Change, h.opts.Buffer), done: make(chan struct{})}
	h.subs[s] = struct{}{}
	return s, cu, nil
}

// Changes delivers the watcher's live changes.
func (s *Subscription) Changes() <-chan *Change { return s.c }

// Done is closed when the Hub ends the subscription; Err then says why.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err is ErrSlow or ErrShutdown once Done is closed.
func (s *Subscription) Err() error {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.err
}

// Close ends the subscription (the watcher went away).
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.hub.end(s, nil)
}

// end removes s; h.mu held.
func (h *Hub) end(s *Subscription, err error) {
	if _, ok := h.subs[s]; !ok {
		return
	}
	delete(h.subs, s)
	s.err = err
	close(s.done)
}
