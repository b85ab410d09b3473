package app

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/meta"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/live"
)

// watchFeed feeds both releases' watch streams with the cached Validators managed here.
type watchFeed struct {
	management, platform *live.Hub
	manages              func(labels map[string]string) bool
	synced               chan struct{} // closed once the streams serve
}

func newWatchFeed(manages func(labels map[string]string) bool) *watchFeed {
	return &watchFeed{management: live.New(live.Options{}), platform: live.New(live.Options{}), manages: manages, synced: make(chan struct{})}
}

// WatchSynced is closed once the watch streams serve; until then they answer 503.
func (a *App) WatchSynced() <-chan struct{} { return a.watch.synced }

// RunWatch feeds the watch streams from the Manager's cache until ctx ends,
// then ends every stream: the HTTP server's shutdown waits for them.
func (a *App) RunWatch(ctx context.Context) error {
	f := a.watch
	defer f.management.Close()
	defer f.platform.Close()
	inf, err := a.mgr.GetCache().GetInformer(ctx, &v1alpha1.Validator{})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("watch streams: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.changed(nil, obj) },
		UpdateFunc: f.changed,
		DeleteFunc: f.deleted,
	})
	if err != nil {
		return fmt.Errorf("watch streams: %w", err)
	}
	defer func() { _ = inf.RemoveEventHandler(reg) }()
	if !toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return nil
	}
	f.management.Ready()
	f.platform.Ready()
	close(f.synced)
	<-ctx.Done()
	return nil
}

func (f *watchFeed) changed(old, obj any) {
	v, ok := obj.(*v1alpha1.Validator)
	if !ok {
		return
	}
	if !f.manages(v.Labels) {
		// No longer this installation's: gone for the watchers.
		if o, ok := old.(*v1alpha1.Validator); ok && f.manages(o.Labels) {
			f.publish(v, true, false)
		}
		return
	}
	f.publish(v, false, false)
}

func (f *watchFeed) deleted(obj any) {
	unknown := false
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, unknown = d.Obj, true
	}
	if v, ok := obj.(*v1alpha1.Validator); ok && f.manages(v.Labels) {
		f.publish(v, true, unknown)
	}
}

func (f *watchFeed) publish(v *v1alpha1.Validator, deleted, unknown bool) {
	rv, err := strconv.ParseUint(v.ResourceVersion, 10, 64)
	if err != nil && !unknown {
		return // not from an API server (resource versions are numbers)
	}
	// Encoded when sent: the hubs keep no copy of the cache's object.
	for hub, encode := range map[*live.Hub]func() []byte{
		f.management: func() []byte { return managementEvent(v, deleted) },
		f.platform:   func() []byte { return platformEvent(v, deleted) },
	} {
		c := live.Change{Name: v.Name, Version: rv, Deleted: deleted, Encode: encode}
		if unknown {
			hub.Unknown(c)
		} else {
			hub.Publish(c)
		}
	}
}

// managementEvent is release 1.11's ValidatorWatchEvent (empty phase reads
// as PENDING, as the list shows it).
func managementEvent(v *v1alpha1.Validator, deleted bool) []byte {
	e := struct {
		Name            string         `json:"name"`
		Phase           v1alpha1.Phase `json:"phase"`
		Reason          string         `json:"reason,omitempty"`
		Message         string         `json:"message,omitempty"`
		ResourceVersion string         `json:"resourceVersion"`
		Deleted         bool           `json:"deleted,omitempty"`
	}{Name: v.Name, Phase: cmp.Or(v.Status.Phase, v1alpha1.PhasePending), ResourceVersion: v.ResourceVersion, Deleted: deleted}
	if c := meta.FindStatusCondition(v.Status.Conditions, v1alpha1.ConditionReady); c != nil {
		e.Reason, e.Message = c.Reason, c.Message
	}
	b, _ := json.Marshal(e)
	return b
}

// platformEvent is release 2.0's ValidatorWatchEvent: the resource's status.
func platformEvent(v *v1alpha1.Validator, deleted bool) []byte {
	e := struct {
		Name            string                   `json:"name"`
		Namespace       string                   `json:"namespace"`
		ResourceVersion string                   `json:"resourceVersion"`
		Deleted         bool                     `json:"deleted,omitempty"`
		Status          v1alpha1.ValidatorStatus `json:"status"`
	}{Name: v.Name, Namespace: v.Namespace, ResourceVersion: v.ResourceVersion, Deleted: deleted, Status: v.Status}
	b, _ := json.Marshal(e)
	return b
}
