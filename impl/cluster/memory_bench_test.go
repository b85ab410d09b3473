package cluster_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/validator-manager/validator-manager/impl/cluster/simcluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// BenchmarkEmbeddedMemory: the heap the embedded cluster and the gateway's
// caches hold per validator, with n validators in objects.db, each as the
// API leaves it after a create with secrets and a backup schedule (the
// Validator resource with 20 environment variables and its status, three
// Secrets, the backup CronJob and its PVC). It reports the time to load
// objects.db (OpenEmbedded: before the server listens), to sync the caches
// (Start: after), and the heap in use after a GC, per validator, once
// synced and again after one release 2.0 list. Sizes: VM_MEM_VALIDATORS
// (comma-separated; default 1000,10000); VM_MEM_HEAPPROFILE=<path> writes a
// heap profile to <path>.<n> after the list.
//
//	VM_MEM_VALIDATORS=1000,10000,100000 go test -run XXX -bench BenchmarkEmbeddedMemory -benchtime 1x -timeout 30m ./impl/cluster/
func BenchmarkEmbeddedMemory(b *testing.B) {
	sizes := []int{1000, 10000}
	if s := os.Getenv("VM_MEM_VALIDATORS"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("VM_MEM_VALIDATORS: %q is not a count", f)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("validators=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			seedEmbedded(b, dir, n)
			for b.Loop() {
				measureEmbedded(b, dir, n)
			}
		})
	}
}

// heap is the heap in use (spans holding live objects: what the process
// keeps) and the live bytes, after a collection.
func heap() (inuse, live uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.HeapAlloc
}

func measureEmbedded(b *testing.B, dir string, n int) {
	base, baseLive := heap()
	resetPeakRSS()
	start := time.Now()
	c, err := simcluster.Open(dir, simcluster.Options{Namespace: "validators"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	loaded := time.Now()
	ctx := context.Background()
	startCtx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if err := c.Start(startCtx); err != nil {
		b.Fatal(err)
	}
	if err := c.Settle(ctx); err != nil {
		b.Fatal(err)
	}
	synced := time.Now()
	peak := procStatus("VmHWM")
	states, err := c.ValidatorStates(ctx)
	if err != nil || len(states) != n {
		b.Fatalf("got %d validator states (%v), want %d", len(states), err, n)
	}
	afterStart, liveAfterStart := heap()
	list, err := c.ResourceList(domain.KindValidator)
	if err != nil {
		b.Fatal(err)
	}
	afterList, _ := heap()
	if path := os.Getenv("VM_MEM_HEAPPROFILE"); path != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", path, n))
		if err != nil {
			b.Fatal(err)
		}
		if err := pprof.WriteHeapProfile(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	per := func(heap uint64) float64 { return float64(int64(heap)-int64(base)) / float64(n) / 1024 }
	b.ReportMetric(loaded.Sub(start).Seconds(), "load-s")
	b.ReportMetric(synced.Sub(loaded).Seconds(), "sync-s")
	b.ReportMetric(per(afterStart), "heap-KiB/validator")
	b.ReportMetric(float64(int64(liveAfterStart)-int64(baseLive))/float64(n)/1024, "live-KiB/validator")
	b.ReportMetric(per(afterList), "heap-KiB/validator-listed")
	b.ReportMetric(float64(afterList)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(peak)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(procStatus("VmRSS"))/1024, "RSS-MiB")
	debug.FreeOSMemory() // as the server does once the caches have synced
	b.ReportMetric(float64(procStatus("VmRSS"))/1024, "RSS-freed-MiB")
	b.ReportMetric(float64(len(list))/float64(n), "list-B/validator")
	runtime.KeepAlive(list)
}

// resetPeakRSS makes VmHWM start again from the current RSS (Linux).
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// procStatus is a field of /proc/self/status in KiB (0 when unknown).
func procStatus(field string) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// seedEmbedded writes n validators into the embedded cluster in dir: one
// through the gateway, as the API writes it, then copies of its rows under
// other names (one SQLite transaction: writing 100,000 through the gateway
// would take minutes of synced commits).
func seedEmbedded(b *testing.B, dir string, n int) {
	b.Helper()
	const tmpl = "tmpl-validator"
	c, err := simcluster.Open(dir, simcluster.Options{Namespace: "validators"})
	if err != nil {
		b.Fatal(err)
	}
	startKube(b, c.Start)
	ctx := context.Background()
	if err := c.ApplyValidator(ctx, benchValidator(b, tmpl, "0.4.1"), nil); err != nil {
		b.Fatal(err)
	}
	if err := c.WriteSecrets(ctx, tmpl, domain.ValidatorSecrets{OnboardingSecret: onboardingValue, LedgerAPIClientSecret: clientSecret, DatabasePassword: dbPassword}); err != nil {
		b.Fatal(err)
	}
	if err := c.ApplyBackupSchedule(ctx, tmpl, &domain.BackupSchedule{Cron: "0 3 * * *", MaxBackups: 7}); err != nil {
		b.Fatal(err)
	}
	u, err := c.Validators().Get(ctx, tmpl, metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	u.Object["status"] = map[string]any{"phase": string(domain.PhaseCompleted), "databaseReady": true}
	if _, err := c.Validators().UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	c.Close()

	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, simcluster.File))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	type row struct {
		group, resource, ns, name, version, kind string
		rv                                       int64
		object                                   []byte
	}
	rs, err := db.Query(`SELECT api_group, resource, namespace, name, version, kind, resource_version, object FROM objects WHERE name LIKE ?`, tmpl+"%")
	if err != nil {
		b.Fatal(err)
	}
	var rows []row
	var rv int64
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.group, &r.resource, &r.ns, &r.name, &r.version, &r.kind, &r.rv, &r.object); err != nil {
			b.Fatal(err)
		}
		rows = append(rows, r)
		rv = max(rv, r.rv)
	}
	if err := rs.Err(); err != nil {
		b.Fatal(err)
	}
	rs.Close()
	if len(rows) != 6 {
		b.Fatalf("got %d objects of the template validator, want 6 (validator, 3 secrets, cronjob, pvc)", len(rows))
	}
	// Each object's uid and resourceVersion, to be replaced in the copies.
	uids := map[string]bool{}
	for _, r := range rows {
		for _, part := range bytes.Split(r.object, []byte(`"uid":"`))[1:] {
			uids[string(part[:36])] = true
		}
	}
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	ins, err := tx.Prepare(`INSERT INTO objects (api_group, resource, namespace, name, version, kind, resource_version, object) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(`DELETE FROM objects WHERE name LIKE ?`, tmpl+"%"); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		name := fmt.Sprintf("validator-%06d", i)
		fresh := map[string]string{}
		for uid := range uids {
			fresh[uid] = uuid.NewString()
		}
		for _, r := range rows {
			rv++
			obj := bytes.ReplaceAll(r.object, []byte(tmpl), []byte(name))
			obj = bytes.Replace(obj, []byte(fmt.Sprintf(`"resourceVersion":"%d"`, r.rv)), []byte(fmt.Sprintf(`"resourceVersion":"%d"`, rv)), 1)
			for old, uid := range fresh {
				obj = bytes.ReplaceAll(obj, []byte(old), []byte(uid))
			}
			if _, err := ins.Exec(r.group, r.resource, r.ns, strings.ReplaceAll(r.name, tmpl, name), r.version, r.kind, rv, obj); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
