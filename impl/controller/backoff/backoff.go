// Package backoff is the retry policy of the controllers' work queues: an
// object whose reconcile fails is tried again after a delay that doubles
// from a base up to Max, so that once a fault clears (a full disk, an API
// server or identity provider away for many minutes) every object is tried
// again within Max, not after client-go's default of up to 16 minutes.
package backoff

import (
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
)

// Max is the longest wait between two tries of a failing object.
const Max = 30 * time.Second

// RateLimiter is controller-runtime's default limiter (per-object
// exponential backoff, and 10 retries a second with bursts of 100 for the
// whole queue) with the per-object backoff from base up to Max.
func RateLimiter[T comparable](base time.Duration) workqueue.TypedRateLimiter[T] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[T](base, Max),
		&workqueue.TypedBucketRateLimiter[T]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}
