package cluster_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"testing"

	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestHeapPerValidator measures what the process's one cache holds per
// validator (docs/benchmarks.md): VM_HEAP_VALIDATORS validators, each with
// its resource, three Secrets and a backup CronJob, are written, then a
// fresh cache (as after a restart) is started with the informers the
// gateway reads (the Validators, held once as their encoding, CronJobs
// and Secrets as records); the live heap it adds, after
// collection, is divided by the count. Skipped unless VM_HEAP_VALIDATORS
// is set (it takes some seconds per hundred validators); VM_HEAP_PROFILE
// names a file for the heap profile taken then.
func TestHeapPerValidator(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("VM_HEAP_VALIDATORS"))
	if n <= 0 || realServer == nil {
		t.Skip("set VM_HEAP_VALIDATORS=1000 and KUBEBUILDER_ASSETS to measure")
	}
	ctx := context.Background()
	ns := newNamespace(t, "heap")
	writer, start, _ := gatewayOn(t, realServer, ns, cluster.KubeOptions{})
	start()
	password := "generated-password"
	for i := range n {
		name := fmt.Sprintf("v%05d", i)
		v := validator(t, name, config(name, "0.4.1", nil))
		if err := writer.ApplyValidator(ctx, v, &domain.PruneSchedule{Cron: "0 0 20 * * ?", MaxDurationText: "5m", RetentionText: "48h"}); err != nil {
			t.Fatal(err)
		}
		if err := writer.WriteSecrets(ctx, name, domain.ValidatorSecrets{OnboardingSecret: onboardingValue, LedgerAPIClientSecret: clientSecret}); err != nil {
			t.Fatal(err)
		}
		if err := writer.DefaultSecrets(ctx, name, domain.SecretDefaults{DatabasePassword: &password}); err != nil {
			t.Fatal(err)
		}
		if err := writer.ApplyBackupSchedule(ctx, name, &domain.BackupSchedule{Validator: name, Cron: "0 3 * * *", MaxBackups: 7}); err != nil {
			t.Fatal(err)
		}
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	k, startRead, _ := gatewayOn(t, realServer, ns, cluster.KubeOptions{})
	startRead()
	names, err := k.ManagedValidators()
	if err != nil || len(names) != n {
		t.Fatalf("managed validators: got %d %v, want %d", len(names), err, n)
	}
	after := heap()
	if path := os.Getenv("VM_HEAP_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.WriteHeapProfile(f); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d validators: the cache holds %d bytes, %d per validator", n, after-before, (after-before)/uint64(n))
	runtime.KeepAlive(k)
}
