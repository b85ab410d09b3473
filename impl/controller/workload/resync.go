package workload

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// resynced passes the cache's periodic resync of a Validator (an update
// whose old and new object are the same version), so that a validator
// whose event was missed (a reconcile that failed into a long backoff, a
// Pod's event dropped) is reconciled again within cluster.Resync; the
// generation and status predicates drop it.
var resynced = predicate.Not[client.Object](predicate.ResourceVersionChangedPredicate{})
