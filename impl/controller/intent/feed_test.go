package intent

import (
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestEnqueueAndFeedReconcile: a name given to Enqueue (a handler of this
// process) or written to the database's change feed (a handler of another
// replica) is reconciled by the running controller: here a row recorded
// after the start is applied to the cluster.
func TestEnqueueAndFeedReconcile(t *testing.T) {
	w := newWorld()
	c := run(t, w)
	for _, tc := range []struct {
		name string
		send func(name string)
	}{
		{"enqueued", c.Enqueue},
		{"fed", func(name string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.changes = append(w.changes, name)
		}},
	} {
		name := tc.name
		w.mu.Lock()
		w.rows[name] = domain.Validator{Name: name, Phase: domain.PhasePending, CustomAuth: true}
		w.mu.Unlock()
		tc.send(name)
		eventually(t, func() bool { _, resource, _ := w.has(name); return resource })
	}
}
