// Package backoff is the retry policy of the controllers' work queues: once
// a long fault clears, every object is tried again within Max, not after
// client-go's default of up to 16 minutes.
package backoff

import (
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
)

// Max is the longest wait between two tries of a failing object.
const Max = 30 * time.Second

// RateLimiter is controller-runtime's default limiter with the per-object
// backoff doubling from base up to Max.
func RateLimiter[T comparable](base time.Duration) workqueue.TypedRateLimiter[T] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[T](base, Max),
		&workqueue.TypedBucketRateLimiter[T]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}
