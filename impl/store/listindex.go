package store

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// The list of validators is answered from memory, as of a generation of
// list_generation: each page reads the generation first and, when it moved,
// merges in the rows stamped since (all rows after a delete), so every
// replica's pages follow every replica's writes.

// listIndex is one immutable snapshot; a newer one replaces it whole,
// sharing what did not change.
type listIndex struct {
	gen     int64
	rows    []*domain.ListedValidator // shown rows, in name order (bytewise, as "C" and SQLite's BINARY)
	byPhase map[domain.Phase][]int32  // positions in rows, per phase
	// names is every row's name followed by a NUL, starts[i] where rows[i]'s
	// begins: a name filter is one bytes.Index per match, never across two
	// rows because validation refuses a NUL in a name.
	names  []byte
	starts []int32
}

// listRows keeps the list's snapshot of one Store.
type listRows struct {
	gen *sql.Stmt // SELECT g, removed FROM list_generation, prepared once
	mu  sync.Mutex
	cur atomic.Pointer[listIndex]

	// Pages join the batch of the next generation read, which starts only
	// after they joined and after the read in flight (which holds reading)
	// ended: a page still sees every write committed before it arrived, and
	// a few reads serve many pages.
	genMu   sync.Mutex
	batch   *genRead // nil when no page waits for a read not yet started
	reading chan struct{}
}

// genRead is one shared read of list_generation.
type genRead struct {
	done         chan struct{} // closed when gen, removed and err are set
	gen, removed int64
	err          error
}

// generation reads list_generation, sharing the read with concurrent
// callers (listRows).
func (s *Store) generation(ctx context.Context) (gen, removed int64, err error) {
	l := &s.list
	l.genMu.Lock()
	r := l.batch
	if r == nil {
		r = &genRead{done: make(chan struct{})}
		l.batch = r
	}
	l.genMu.Unlock()
	// A waiter stays until its batch is read, whatever its context (bounded
	// by two reads).
	select {
	case <-r.done:
	case l.reading <- struct{}{}:
		l.genMu.Lock()
		mine := l.batch == r // else another of its waiters read it meanwhile
		if mine {
			l.batch = nil
		}
		l.genMu.Unlock()
		if mine {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), genReadTimeout)
			r.err = l.gen.QueryRowContext(rctx).Scan(&r.gen, &r.removed)
			cancel()
			close(r.done)
		}
		<-l.reading
	}
	return r.gen, r.removed, r.err
}

// genReadTimeout bounds a shared generation read: it outlives the request
// that runs it (others wait on it), so not that request's deadline.
const genReadTimeout = 5 * time.Second

// listColumns are the columns the snapshot reads, in scanListRow's order.
const listColumns = "name, phase, immutable, creating, list_view, list_view_version"

// index returns the snapshot as of the database's current generation.
func (s *Store) index(ctx context.Context) (*listIndex, error) {
	gen, removed, err := s.generation(ctx)
	if err != nil {
		return nil, err
	}
	if ix := s.list.cur.Load(); ix != nil && ix.gen >= gen {
		return ix, nil
	}
	s.list.mu.Lock()
	defer s.list.mu.Unlock()
	old := s.list.cur.Load()
	if old != nil && old.gen >= gen {
		return old, nil // another page read it meanwhile
	}
	var rows *sql.Rows
	if old == nil || removed > old.gen {
		rows, err = s.sqlDB.QueryContext(ctx, "SELECT "+listColumns+" FROM validators")
		old = nil
	} else {
		arg := "?"
		if s.dialect == "postgres" {
			arg = "$1"
		}
		rows, err = s.sqlDB.QueryContext(ctx, "SELECT "+listColumns+" FROM validators WHERE list_seq > "+arg, old.gen)
	}
	if err != nil {
		return nil, err
	}
	changed, err := scanListRows(rows)
	if err != nil {
		return nil, err
	}
	ix := merge(old, changed, gen)
	s.list.cur.Store(ix)
	return ix, nil
}

// listRow is a row read for the snapshot.
type listRow struct {
	domain.ListedValidator
	creating bool
}

func scanListRows(rows *sql.Rows) ([]listRow, error) {
	defer rows.Close()
	var out []listRow
	for rows.Next() {
		var r listRow
		var view sql.RawBytes
		if err := rows.Scan(&r.Name, &r.Phase, &r.Immutable, &r.creating, &view, &r.ListViewVersion); err != nil {
			return nil, err
		}
		if view != nil {
			r.ListView = bytes.Clone(view)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// merge makes the snapshot of generation gen: old's rows, each changed row
// replacing its old one (or leaving, when it is creating now).
func merge(old *listIndex, changed []listRow, gen int64) *listIndex {
	slices.SortFunc(changed, func(a, b listRow) int { return cmp.Compare(a.Name, b.Name) })
	var prev []*domain.ListedValidator
	if old != nil {
		prev = old.rows
	}
	rows := make([]*domain.ListedValidator, 0, len(prev)+len(changed))
	namesMoved, phasesMoved := old == nil, old == nil
	i := 0
	for _, c := range changed {
		k, found := sort.Find(len(prev)-i, func(k int) int { return strings.Compare(c.Name, prev[i+k].Name) })
		rows = append(rows, prev[i:i+k]...)
		i += k
		if found {
			phasesMoved = phasesMoved || c.creating || prev[i].Phase != c.Phase
			namesMoved = namesMoved || c.creating
			i++ // replaced
		} else if !c.creating {
			namesMoved, phasesMoved = true, true
		}
		if !c.creating {
			r := c.ListedValidator
			rows = append(rows, &r)
		}
	}
	rows = append(rows, prev[i:]...)

	ix := &listIndex{gen: gen, rows: rows}
	if phasesMoved {
		ix.byPhase = map[domain.Phase][]int32{}
		for i, r := range rows {
			ix.byPhase[r.Phase] = append(ix.byPhase[r.Phase], int32(i))
		}
	} else {
		ix.byPhase = old.byPhase
	}
	if !namesMoved {
		ix.names, ix.starts = old.names, old.starts
		return ix
	}
	size := 0
	for _, r := range rows {
		size += len(r.Name) + 1
	}
	ix.names, ix.starts = make([]byte, 0, size), make([]int32, len(rows))
	for i, r := range rows {
		ix.starts[i] = int32(len(ix.names))
		ix.names = append(ix.names, r.Name...)
		ix.names = append(ix.names, 0)
	}
	return ix
}

// page answers a filter from the snapshot: the page and the filtered set's size.
func (ix *listIndex) page(f domain.ValidatorFilter) ([]domain.ListedValidator, int64) {
	if f.NameContains == "" && f.Phase == "" {
		return window(ix.rows, f.Page, func(r *domain.ListedValidator) domain.ListedValidator { return *r }), int64(len(ix.rows))
	}
	at := ix.byPhase[f.Phase]
	if f.NameContains != "" {
		at = ix.matching(f.NameContains, f.Phase)
	}
	return window(at, f.Page, func(i int32) domain.ListedValidator { return *ix.rows[i] }), int64(len(at))
}

// matching lists the positions of the rows whose name holds sub (literally,
// byte for byte) and whose phase is phase (any when empty).
func (ix *listIndex) matching(sub string, phase domain.Phase) []int32 {
	var out []int32
	if strings.IndexByte(sub, 0) >= 0 {
		return out
	}
	needle := []byte(sub)
	for at := 0; ; {
		k := bytes.Index(ix.names[at:], needle)
		if k < 0 {
			return out
		}
		// The row whose name holds the match: the last start at or before it.
		i := sort.Search(len(ix.starts), func(i int) bool { return int(ix.starts[i]) > at+k }) - 1
		if phase == "" || ix.rows[i].Phase == phase {
			out = append(out, int32(i))
		}
		// On past this name (and its NUL): one match per row.
		if i+1 < len(ix.starts) {
			at = int(ix.starts[i+1])
		} else {
			return out
		}
	}
}

// window copies one page of items out of a filtered set.
func window[T any](items []T, p domain.Page, row func(T) domain.ListedValidator) []domain.ListedValidator {
	if p.Offset >= len(items) {
		return []domain.ListedValidator{}
	}
	items = items[p.Offset:]
	items = items[:min(len(items), p.Limit)]
	out := make([]domain.ListedValidator, len(items))
	for i, it := range items {
		out[i] = row(it)
	}
	return out
}
