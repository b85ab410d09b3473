package intent

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestEnqueueAndFeedReconcile: a name given to Enqueue (a handler) or sent
// on Options.Changes (the database feed) is reconciled by the running
// controller: here a row recorded after the start is applied to the
// cluster.
func TestEnqueueAndFeedReconcile(t *testing.T) {
	w := newWorld()
	changes := make(chan event.TypedGenericEvent[string])
	c := run(t, w, func(o *Options) { o.Changes = changes })
	for _, tc := range []struct {
		name string
		send func(name string)
	}{
		{"enqueued", c.Enqueue},
		{"fed", func(name string) { changes <- event.TypedGenericEvent[string]{Object: name} }},
	} {
		name := tc.name
		w.mu.Lock()
		w.rows[name] = domain.Validator{Name: name, Phase: domain.PhasePending}
		w.mu.Unlock()
		tc.send(name)
		eventually(t, func() bool { _, resource, _ := w.has(name); return resource })
	}
}
