package cluster_test

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/validator-manager/validator-manager/impl/apis/v1alpha1"
	"github.com/validator-manager/validator-manager/impl/cluster"
)

// Validators and Jobs are handed to the controllers again within a minute
// (every other kind at the resync given), so that one whose event was
// missed converges within a minute of a fault clearing.
func TestValidatorsAndJobsResyncWithinAMinute(t *testing.T) {
	const ns = "resync"
	o := cluster.CacheOptions(ns, 10*time.Minute)
	found := map[string]bool{}
	for obj, by := range o.ByObject {
		kind := fmt.Sprintf("%T", obj)
		switch obj.(type) {
		case *v1alpha1.Validator, *batchv1.Job:
		default:
			continue
		}
		found[kind] = true
		p := by.Namespaces[ns].SyncPeriod
		if p == nil || *p > 27*time.Second {
			t.Errorf("%s: resync %v, want at most 27s (a resync comes within two periods)", kind, p)
		}
	}
	if len(found) != 2 {
		t.Errorf("resynced kinds %v, want the Validator and the Job", found)
	}
	if o.SyncPeriod == nil || *o.SyncPeriod != 10*time.Minute {
		t.Errorf("the other kinds' resync %v, want the one given", o.SyncPeriod)
	}
}
