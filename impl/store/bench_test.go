package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

// BenchmarkListValidators reads pages of 50 out of 100,000 validators with
// specs of a real create's size (about 640 bytes), at offsets spread over
// the whole table (the deepest at 99,950), unfiltered, by phase, and by a
// name substring; and a phase change followed by a page, which reads the
// changed row again (the cost of keeping a replica's rows in step). Pages
// come from the rows in memory; each is another.
func BenchmarkListValidators(b *testing.B) {
	const n = 100000
	for name, s := range backends(b) {
		seed(b, s, n)
		ctx := context.Background()
		cases := []struct {
			name   string
			filter func(r *rand.Rand) domain.ValidatorFilter
		}{
			{"all", func(r *rand.Rand) domain.ValidatorFilter {
				return domain.ValidatorFilter{Page: domain.Page{Offset: r.IntN(n - 49), Limit: 50}}
			}},
			{"last", func(r *rand.Rand) domain.ValidatorFilter {
				return domain.ValidatorFilter{Page: domain.Page{Offset: n - 50, Limit: 50}}
			}},
			{"phase", func(r *rand.Rand) domain.ValidatorFilter {
				return domain.ValidatorFilter{Phase: domain.PhaseRunning, Page: domain.Page{Offset: r.IntN(n / 2), Limit: 50}}
			}},
			{"name", func(r *rand.Rand) domain.ValidatorFilter {
				// "node-0123" matches 10 names in 100,000.
				return domain.ValidatorFilter{NameContains: fmt.Sprintf("node-%04d", r.IntN(n/10)), Page: domain.Page{Limit: 50}}
			}},
		}
		b.Run(name+"/write+page", func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 4))
			phases := []domain.Phase{domain.PhaseCompleted, domain.PhaseRunning}
			i := 0
			for b.Loop() {
				i++
				if err := s.SyncValidatorState(ctx, fmt.Sprintf("node-%05d", r.IntN(n)), domain.ValidatorState{Phase: phases[i%2]}); err != nil {
					b.Fatal(err)
				}
				if _, _, err := s.ListValidators(ctx, domain.ValidatorFilter{Page: domain.Page{Offset: r.IntN(n - 49), Limit: 50}}); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, c := range cases {
			b.Run(name+"/"+c.name, func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				for b.Loop() {
					page, total, err := s.ListValidators(ctx, c.filter(r))
					if err != nil || len(page) == 0 || total == 0 {
						b.Fatalf("got %d rows, total %d, error %v", len(page), total, err)
					}
				}
			})
		}
	}
}

// benchSpec is about the size of a real create's stored spec.
var benchSpec = `{"name":"x","imageRepo":"registry.example.com/splice","imageTag":"0.4.2",` +
	`"clusterConfig":{"scanAddress":"https://scan.example.com","svSponsorAddress":"https://sv.example.com",` +
	`"partyHint":"acme-validator","migration":{"id":1},"defaultJvmOptions":"-Xms1g",` +
	`"appInfoValidator":{"envVars":[{"name":"LOG_LEVEL","value":"INFO"},{"name":"JAVA_OPTS","value":"-Xmx2g"}]},` +
	`"appInfoLedgerNameService":{"envVars":[]}},"participant":{"envVars":[]},` +
	`"auth":{"audience":"https://ledger.example.com","cnsClientId":"cns","walletClientId":"wallet",` +
	`"ledgerApiClientId":"validator","ledgerApiUser":"validator-user","walletUser":"wallet-user"},` +
	`"databaseConfig":{"username":"cnadmin"},"writtenSecrets":{"onboarding":true,"ledgerApiAuth":true,"database":true},` +
	`"pad":"` + strings.Repeat("x", 80) + `"}`

// seed imports n validators, every other one RUNNING, in one transaction
// (ImportValidators); a second run of the benchmark (-count) finds them there.
func seed(b *testing.B, s *store.Store, n int) {
	b.Helper()
	ctx := context.Background()
	if _, total, err := s.ListValidators(ctx, domain.ValidatorFilter{Page: domain.Page{Limit: 1}}); err != nil || total >= int64(n) {
		return
	}
	at := time.Now().UTC()
	vs := make([]domain.Validator, n)
	for i := range vs {
		vs[i] = domain.Validator{Name: fmt.Sprintf("node-%05d", i), Phase: domain.PhasePending, Spec: []byte(benchSpec), CreatedAt: at, UpdatedAt: at}
		if i%2 == 0 {
			vs[i].Phase = domain.PhaseRunning
		}
	}
	if err := s.ImportValidators(ctx, vs); err != nil {
		b.Fatal(err)
	}
	// What autovacuum does in time: statistics, and the visibility map that
	// lets PostgreSQL walk the name index without visiting the table.
	if err := s.Exec(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	if s.Dialect() == "postgres" {
		if err := s.Exec(ctx, "VACUUM validators"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListRemoteParticipantsEmpty is the store's part of the cheap
// authenticated read (`make bench`: 1.11's list of remote participants,
// none registered): the count, and no page. cpu-ns/op is the process's CPU
// (user and system) a call, which a loaded machine does not inflate as it
// does the wall time.
func BenchmarkListRemoteParticipantsEmpty(b *testing.B) {
	for name, s := range backends(b) {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			start := cpuTime(b)
			for b.Loop() {
				if _, total, err := s.ListRemoteParticipants(ctx, domain.RemoteParticipantFilter{Page: domain.Page{Limit: 50}}); err != nil || total != 0 {
					b.Fatalf("list: %d, %v", total, err)
				}
			}
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's CPU time so far (user and system).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
