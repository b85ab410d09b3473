package main

// The control plane's cases: a restart's readiness, writes and idle time,
// a burst of creates, and created → RUNNING. They read the embedded
// cluster through the administrator's kubeconfig the server writes into its
// data directory, and the server's own CPU from /proc.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/validator-manager/validator-manager/impl/cluster"
)

// idleCPU is the server's CPU in a one-second window below which its
// controllers count as idle (the embedded default's simulated kubelet
// and the leader's lease renewals go on in every window).
const idleCPU = 100 * time.Millisecond

// kube is a client of the embedded cluster of a data directory.
func kube(data string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(data, "kubeconfig"))
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	return kubernetes.NewForConfig(cfg)
}

// apiServerReady reports whether the embedded kube-apiserver of a data
// directory answers /readyz (false while its kubeconfig is not written yet).
func apiServerReady(data string) bool {
	k, err := kube(data)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = k.RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err == nil
}

// treeCPU is the CPU so far of pid and of each of its descendants (the
// embedded control plane's processes and the node simulator), by command
// name.
func treeCPU(pid int) map[string]time.Duration {
	parent := map[int]int{}
	names := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
		fields := strings.Fields(string(raw[end+2:]))
		if open < 0 || len(fields) < 2 {
			continue
		}
		names[p] = string(raw[open+1 : end])
		parent[p], _ = strconv.Atoi(fields[1])
	}
	out := map[string]time.Duration{}
	for p, name := range names {
		for q := p; q > 1; q = parent[q] {
			if q == pid {
				out[name] += cpuTime(p)
				break
			}
		}
	}
	return out
}

// cpuText is the CPU each process spent between two treeCPU readings, in
// seconds and as a share of the machine over d.
func cpuText(before, after map[string]time.Duration, d time.Duration) string {
	var total time.Duration
	type spent struct {
		name string
		cpu  time.Duration
	}
	var all []spent
	for name, c := range after {
		all = append(all, spent{name, c - before[name]})
		total += c - before[name]
	}
	sort.Slice(all, func(i, j int) bool { return all[i].cpu > all[j].cpu })
	parts := make([]string, 0, len(all)+1)
	for _, s := range all {
		parts = append(parts, fmt.Sprintf("%s %.0f s", s.name, s.cpu.Seconds()))
	}
	parts = append(parts, fmt.Sprintf("in all %.0f s, %.0f %% of the machine", total.Seconds(), 100*total.Seconds()/(d.Seconds()*float64(numCPU()))))
	return strings.Join(parts, ", ")
}

// idleAfter waits until the server spends less than idleCPU in a second
// (at most limit) and returns how long that took from since.
func idleAfter(s *server, since time.Time, limit time.Duration) (time.Duration, bool) {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); {
		c0 := cpuTime(s.cmd.Process.Pid)
		time.Sleep(time.Second)
		if cpuTime(s.cmd.Process.Pid)-c0 < idleCPU {
			return time.Since(since), true
		}
	}
	return time.Since(since), false
}

// apiWrites reads the kube-apiserver's request counters (it starts with
// the server, so they count from the server's start) and returns the
// writes (POST, PUT, PATCH, DELETE, APPLY) per resource.
func apiWrites(ctx context.Context, k *kubernetes.Clientset) (map[string]int, error) {
	raw, err := k.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		verb, resource := label(line, "verb"), label(line, "resource")
		if !slices.Contains([]string{"POST", "PUT", "PATCH", "DELETE", "APPLY", "DELETECOLLECTION"}, verb) {
			continue
		}
		if sub := label(line, "subresource"); sub != "" {
			resource += "/" + sub
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			out[resource] += int(v)
		}
	}
	return out, sc.Err()
}

func label(line, name string) string {
	_, rest, ok := strings.Cut(line, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// writesText sums writes, leases apart (leader election renews its lease
// every few seconds whatever happens).
func writesText(w map[string]int) (other int, text string) {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		if k != "leases" {
			other += w[k]
		}
		parts = append(parts, fmt.Sprintf("%s %d", k, w[k]))
	}
	return other, strings.Join(parts, ", ")
}

// restarted reports a start of the server on a data set nothing changed
// in: ready (health 200), the controllers' idle time, and the writes to the
// API server until then.
func restarted(ds dataset, srv *server) error {
	idle, ok := idleAfter(srv, srv.began, 60*time.Second)
	k, err := kube(ds.data)
	if err != nil {
		return err
	}
	w, err := apiWrites(context.Background(), k)
	if err != nil {
		return err
	}
	others, text := writesText(w)
	tag := fmt.Sprintf("%s, %d", ds.db, ds.n)
	// The goal is the server's: on a real cluster the API server is
	// already up, so the embedded control plane's own start is shown
	// apart and not counted against it.
	ownReady := srv.ready - srv.controlPlane
	report("restart, nothing changed: ready (health 200), after the control plane answered", tag, "< 5 s", "",
		fmt.Sprintf("%s (%s from the start, of which the embedded control plane's start %s)", secs(ownReady), secs(srv.ready), secs(srv.controlPlane)),
		srv.controlPlane > 0 && ownReady < 5*time.Second)
	ownIdle := idle - srv.controlPlane
	idleText := fmt.Sprintf("%s (%s from the start)", secs(ownIdle), secs(idle))
	if !ok {
		idleText = "not within " + secs(idle) + " of the start"
	}
	report("restart: controllers idle (server CPU < 10% of a core over 1 s), after the control plane answered", tag, "< 10 s", "", idleText,
		ok && srv.controlPlane > 0 && ownIdle < 10*time.Second)
	report("restart: writes to the API server until idle, leases aside", tag, "0", "", fmt.Sprintf("%d (%s)", others, text), others == 0)
	return nil
}

// fresh starts a server on a new, empty data set on SQLite; done stops it
// and removes the data.
func fresh(what string) (ds dataset, srv *server, done func(), err error) {
	data := filepath.Join(*dir, fmt.Sprintf("%s-%d", what, time.Now().Unix()))
	if err := os.MkdirAll(data, 0o700); err != nil {
		return dataset{}, nil, nil, err
	}
	remove := func() { _ = os.RemoveAll(data); _ = os.Remove(data + ".log") }
	ds = dataset{db: "sqlite", data: data}
	if srv, err = start(ds); err != nil {
		remove()
		return dataset{}, nil, nil, err
	}
	return ds, srv, func() {
		srv.stop()
		if !*keep {
			remove()
		}
	}, nil
}

// created is what createMany did: the names created, in the order their
// creates answered, each create's latency and when it answered.
type created struct {
	names []string
	lat   []time.Duration
	at    []time.Time
	// retries of creates answered 503 (each counted in its latency)
	retries *atomic.Int64
}

// last is when the last create answered.
func (c created) last() time.Time {
	if len(c.at) == 0 {
		return time.Time{}
	}
	return c.at[len(c.at)-1]
}

// createMany creates validators named prefix-00000... (bodies from body)
// from clients concurrent clients until n are created (n > 0) or d has
// passed; with both, the n creates are spread evenly over d (create i
// starts no earlier than i·d/n after the first). A name already there (409:
// an interrupted seed) counts as created.
func createMany(s *server, prefix string, body func(string) []byte, clients, n int, d time.Duration) (created, error) {
	var (
		mu   sync.Mutex
		out  = created{retries: new(atomic.Int64)}
		next atomic.Int64
		fail atomic.Pointer[error]
	)
	began := time.Now()
	deadline := began.Add(d)
	paced := n > 0 && d > 0
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for fail.Load() == nil && (d == 0 || paced || time.Now().Before(deadline)) {
				i := int(next.Add(1)) - 1
				if n > 0 && i >= n {
					return
				}
				if paced {
					time.Sleep(time.Until(began.Add(d * time.Duration(i) / time.Duration(n))))
				}
				name := fmt.Sprintf("%s-%05d", prefix, i)
				t0 := time.Now()
				status, answer, err := call(s, http.MethodPost, "/api/validators", body(name))
				// 503 asks to try again shortly (the embedded control
				// plane's readiness check timed out on a loaded machine).
				for tries := 0; err == nil && status == http.StatusServiceUnavailable && tries < 20; tries++ {
					out.retries.Add(1)
					time.Sleep(250 * time.Millisecond)
					status, answer, err = call(s, http.MethodPost, "/api/validators", body(name))
				}
				if err == nil && status != http.StatusCreated && status != http.StatusConflict {
					err = fmt.Errorf("create %s: %d %s", name, status, answer)
				}
				if err != nil {
					fail.Store(&err)
					return
				}
				mu.Lock()
				now := time.Now()
				out.names, out.lat, out.at = append(out.names, name), append(out.lat, now.Sub(t0)), append(out.at, now)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := fail.Load(); err != nil {
		return out, *err
	}
	return out, nil
}

// withStatefulSet counts the names that have a StatefulSet in the cluster.
func withStatefulSet(ctx context.Context, k *kubernetes.Clientset, names []string) (int, error) {
	list, err := k.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{LabelSelector: cluster.ValidatorLabel})
	if err != nil {
		return 0, err
	}
	has := map[string]bool{}
	for _, s := range list.Items {
		has[s.Labels[cluster.ValidatorLabel]] = true
	}
	n := 0
	for _, name := range names {
		if has[name] {
			n++
		}
	}
	return n, nil
}

// burst: clients create for d on a new server (n > 0: n creates spread
// over d, as fast as the server answers otherwise); how many of the created
// validators have their StatefulSet when the burst ends, and within 10 s of
// the last create.
func burst(clients, n int, d time.Duration) error {
	ds, srv, done, err := fresh("burst")
	if err != nil {
		return err
	}
	defer done()
	k, err := kube(ds.data)
	if err != nil {
		return err
	}
	ctx := context.Background()
	stopProfiles := profileAlong(fmt.Sprintf("burst-%d", n))
	c, err := createMany(srv, "burst", createBody, clients, n, d)
	stopProfiles()
	if err != nil {
		return err
	}
	names, lat, last := c.names, c.lat, c.last()
	atEnd, err := withStatefulSet(ctx, k, names)
	if err != nil {
		return err
	}
	within := atEnd
	for time.Since(last) < 10*time.Second && within < len(names) {
		time.Sleep(250 * time.Millisecond)
		if within, err = withStatefulSet(ctx, k, names); err != nil {
			return err
		}
	}
	r := result{lat: lat}
	tag := fmt.Sprintf("sqlite, %d clients × %s", clients, d)
	if n > 0 {
		tag = fmt.Sprintf("sqlite, %d clients, %d creates spread over %s", clients, n, d)
	}
	report(fmt.Sprintf("burst: creates under %d clients (count, rate, p50 / p99 of a create)", clients), tag, "p99 < 200 ms", "", fmt.Sprintf("%d, %.1f/s (%s / %s)", len(names), float64(len(names))/d.Seconds(), ms(r.pct(0.5)), ms(r.pct(0.99))), r.pct(0.99) < 200*time.Millisecond)
	measured := fmt.Sprintf("%d / %d of %d", atEnd, within, len(names))
	if n == 0 {
		// As many creates as the server answers are more than any cluster
		// starts in a minute: shown, but the goal is the paced burst's.
		fmt.Printf("- burst: with their StatefulSet when it ends / within 10 s of the last create (%s): %s\n", tag, measured)
		return nil
	}
	report("burst: with their StatefulSet when it ends / within 10 s of the last create", tag, "all within 10 s", "", measured, within == len(names))
	return nil
}

// converge: clients create n validators on a new server; the time from the
// first create until the 1.11 list shows none of them PENDING (RUNNING or
// COMPLETED, at most limit after the last create), and where that time
// went, stage by stage (stages.go).
func converge(clients, n int, limit time.Duration) error {
	ds, srv, done, err := fresh("converge")
	if err != nil {
		return err
	}
	defer done()
	k, err := kube(ds.data)
	if err != nil {
		return err
	}
	stopProfiles := profileAlong(fmt.Sprintf("converge-%d", n))
	defer stopProfiles()
	cpu0 := treeCPU(srv.cmd.Process.Pid)
	began := time.Now()
	c, err := createMany(srv, "conv", createBody, clients, n, 0)
	if err != nil {
		return err
	}
	t := timeline{}
	for i, name := range c.names {
		t[name] = &[stages]time.Time{stageCreated: c.at[i]}
	}
	created := time.Since(began)
	// limit counts from the last create: creates may take longer than it.
	past := 0
	for {
		pending, err := pendingRows(srv)
		if err != nil {
			return err
		}
		now := time.Now()
		past = 0
		for name, reached := range t {
			if !pending[name] {
				past++
				if reached[stageRow].IsZero() {
					reached[stageRow] = now
				}
			}
		}
		if past >= n || time.Since(began)-created > limit {
			break
		}
		time.Sleep(time.Second)
	}
	took, after := time.Since(began), time.Since(c.last())
	fmt.Printf("CPU over the case (%s, %d cores): %s\n", secs(took), numCPU(), cpuText(cpu0, treeCPU(srv.cmd.Process.Pid), took))
	if r := c.retries.Load(); r > 0 {
		fmt.Printf("creates answered 503 and tried again: %d\n", r)
	}
	stopProfiles()
	if err := reconciles(srv); err != nil {
		fmt.Fprintln(os.Stderr, "vm-bench: the server's metrics:", err)
	}
	if err := clusterStages(context.Background(), k, t); err != nil {
		return err
	}
	if w, err := apiWrites(context.Background(), k); err == nil {
		_, text := writesText(w)
		fmt.Printf("writes the API server counted (every writer's), for %d validators: %s\n", n, text)
	}
	text := fmt.Sprintf("%s after the last create (%s from the first; creates took %s)", secs(after), secs(took), secs(created))
	if past < n {
		text = fmt.Sprintf("not within %s of the last create: %d of %d past PENDING after %s (creates took %s)", secs(limit), past, n, secs(took), secs(created))
	}
	tag := fmt.Sprintf("sqlite, %d clients", clients)
	report(fmt.Sprintf("%d validators from created to RUNNING (or COMPLETED)", n), tag, "< 120 s after the last create", "", text, past >= n && after < 120*time.Second)
	all := printStages(t, c.last())
	figures = append(figures, figure{"the same, stage by stage: when all had reached each, from the last create", tag, "—", "", all, "—"})
	return nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// A figure is one line of the closing table.
type figure struct{ name, set, goal, baseline, measured, met string }

var figures []figure

// report records a figure and prints it at once.
func report(name, set, goal, baseline, measured string, met bool) {
	f := figure{name, set, goal, baseline, measured, yes(met)}
	figures = append(figures, f)
	fmt.Printf("- %s (%s): %s; goal %s; met: %s\n", name, set, measured, goal, f.met)
}

// summary prints every figure beside its goal and baseline.
func summary() {
	fmt.Println("\n## Figures against their goals")
	fmt.Println()
	fmt.Println("| figure | data set | goal | baseline | measured | met |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, f := range figures {
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", f.name, f.set, f.goal, f.baseline, f.measured, f.met)
	}
}

// profileAlong writes, with -pprof and -cpuprofile, consecutive CPU
// profiles of 30 s of the server (what <-cpuprofile>/<what>-<i>.pprof
// covers: from i × 30 s on) until stop is called.
func profileAlong(what string) (stop func()) {
	if *profiles == "" || *pprof == "" {
		return func() {}
	}
	done := make(chan struct{})
	var once sync.Once
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			file := filepath.Join(*profiles, fmt.Sprintf("%s-%02d.pprof", what, i))
			if err := cpuProfileFor(file, 30*time.Second); err != nil {
				fmt.Fprintln(os.Stderr, "vm-bench: profile:", err)
				return
			}
		}
	}()
	return func() {
		once.Do(func() { close(done) })
	}
}

// reconciles prints the controllers' reconciles by result and the
// server's requests to the API server by method, from its metrics.
func reconciles(s *server) error {
	status, body, err := call(s, http.MethodGet, "/actuator/prometheus", nil)
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("metrics: %d %v", status, err)
	}
	if *profiles != "" {
		_ = os.WriteFile(filepath.Join(*profiles, "converge-metrics.txt"), body, 0o600)
	}
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "controller_runtime_reconcile_total{"):
			out = append(out, fmt.Sprintf("%s/%s %s", label(line, "controller"), label(line, "result"), line[strings.LastIndexByte(line, ' ')+1:]))
		case strings.HasPrefix(line, "rest_client_requests_total{"):
			out = append(out, fmt.Sprintf("API %s %s %s", label(line, "method"), label(line, "code"), line[strings.LastIndexByte(line, ' ')+1:]))
		}
	}
	fmt.Printf("server: %s\n", strings.Join(out, ", "))
	return sc.Err()
}
