package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// BenchmarkCreatesContended records creates from 16 clients at once while
// a 17th writer plays the leader (a state sync, a take of the change feed
// and a compare-and-clear of pending secrets, in a loop), as a burst of
// creates meets the leader's provisioning: the latency of a create's
// transaction at p50 and p99, the figure a create's answer waits on.
func BenchmarkCreatesContended(b *testing.B) {
	for name, s := range backends(b) {
		var seq atomic.Int64 // across the runs b.Run makes of one backend
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			first := seq.Load()
			stop := make(chan struct{})
			leader := sync.WaitGroup{}
			leader.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					n := seq.Load() - first
					if n == 0 {
						time.Sleep(time.Millisecond)
						continue
					}
					victim := fmt.Sprintf("c%07d", first+int64(i)%n)
					_ = s.SyncValidatorState(ctx, victim, domain.ValidatorState{Phase: domain.PhaseRunning})
					_, _ = s.TakeChanges(ctx, 100)
					_ = s.ClearPendingSecrets(ctx, victim, "sealed")
				}
			})
			var mu sync.Mutex
			var took []time.Duration
			b.SetParallelism(16) // 16 × GOMAXPROCS clients; GOMAXPROCS is 1 for this figure: -cpu 1
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					i := seq.Add(1) - 1
					v := domain.Validator{Name: fmt.Sprintf("c%07d", i), Phase: domain.PhasePending,
						Spec: []byte(benchSpec), PendingSecrets: "sealed", Claim: "claim"}
					start := time.Now()
					if err := s.RecordCreate(ctx, &v, nil); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(start))
				}
				mu.Lock()
				took = append(took, mine...)
				mu.Unlock()
			})
			b.StopTimer()
			close(stop)
			leader.Wait()
			if len(took) == 0 {
				return
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
