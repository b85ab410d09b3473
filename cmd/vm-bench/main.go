// Command vm-bench is validator-manager's load benchmark (`make bench`).
//
// For each data set (1,000 and 100,000 validators, on SQLite and, when
// TEST_POSTGRES_DSN is set, on PostgreSQL) it seeds a data directory
// through the store, starts the real server binary on it and a bare
// net/http baseline (same bearer check, answering the bytes captured once
// from the server), then drives both from 16 connections in alternating
// rounds and prints throughput, p50 and p99 of each, their ratio, the
// server's CPU per request, its RSS and its live heap per validator.
// Everything listens on loopback; every round is bounded in time and in
// requests.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

var (
	bin      = flag.String("bin", "bin/validator-manager", "server binary")
	dir      = flag.String("dir", "bin/bench", "where seeded data directories are kept between runs")
	sizes    = flag.String("sizes", "1000,10000", "numbers of validators of the seeded data sets (none: only the burst and convergence cases)")
	conns    = flag.Int("conns", 16, "concurrent connections")
	round    = flag.Duration("round", 2*time.Second, "length of one round")
	rounds   = flag.Int("rounds", 2, "rounds per case and side (alternating baseline, server)")
	maxReq   = flag.Int("max-requests", 200000, "most requests in one round")
	creates  = flag.Int("creates", 100, "validators created one at a time (then deleted) per data set: creates/s and CPU per create")
	seedAPI  = flag.Int("seed-api", 10000, "data sets of up to this many validators are seeded through the API; larger ones through the store")
	settle   = flag.Duration("seed-settle", 20*time.Minute, "longest wait, after seeding through the API, until no validator is PENDING")
	bursts   = flag.Duration("burst", time.Minute, "length of the burst of creates on a new server (0: none)")
	bpaced   = flag.Int("burst-paced", 311, "creates of a second burst, spread evenly over its length (issue 23's 311 in 60 s; 0: none)")
	bclients = flag.Int("burst-clients", 16, "concurrent clients of the burst and of the convergence case")
	convN    = flag.Int("converge", 1000, "validators created on a new server, then timed until all are RUNNING (0: none)")
	convMax  = flag.Duration("converge-limit", 5*time.Minute, "longest wait for the convergence case, from its last create")
	pprof    = flag.String("pprof", "", "loopback address for the server's profiling listener (server.pprofListen), to profile a run (empty: a free port, read for the live heap only)")
	profiles = flag.String("cpuprofile", "", "with -pprof: write into this directory a CPU profile of the server's first round of each case, and 30 s profiles along the bursts and the convergence case")
	// The embedded default's one node declares the room its Pods may
	// request, and leaves Pending what does not fit, as a scheduler would;
	// a validator requests some 0.7 CPU, 1.5 Gi and 5 Pods. The bench's
	// node stands for a cluster with room for the largest set.
	nodeCPU    = flag.String("node-cpu", "8000", "CPUs of the embedded default's node (--cluster.node.cpu)")
	nodeMemory = flag.String("node-memory", "16Ti", "memory of the embedded default's node (--cluster.node.memory)")
	nodePods   = flag.Int("node-pods", 60000, "Pods the embedded default's node runs (--cluster.node.pods)")
	keep       = flag.Bool("keep", false, "keep the data directories (and the server's log beside each) of the burst and convergence cases")
	only       = flag.String("cases", "", "run only the request cases whose name contains this text")
	baseline   = flag.String("baseline", "", "internal: serve the baseline from this file")
)

func main() {
	flag.Parse()
	if *baseline != "" {
		if err := serveBaseline(*baseline); err != nil {
			fmt.Fprintln(os.Stderr, "baseline:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "vm-bench:", err)
		os.Exit(1)
	}
}

type dataset struct {
	db   string // sqlite or postgres
	n    int
	data string // data directory
	dsn  string // PostgreSQL DSN; empty on SQLite
}

func run() error {
	var sets []dataset
	pg := os.Getenv("TEST_POSTGRES_DSN")
	for _, s := range strings.Split(*sizes, ",") {
		if s == "none" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			return fmt.Errorf("-sizes: %q is not a number of validators (at least 100)", s)
		}
		sets = append(sets, dataset{db: "sqlite", n: n, data: filepath.Join(*dir, fmt.Sprintf("sqlite-%d", n))})
		if pg != "" {
			dsn, err := benchDatabase(pg, n)
			if err != nil {
				return err
			}
			sets = append(sets, dataset{db: "postgres", n: n, data: filepath.Join(*dir, fmt.Sprintf("postgres-%d", n)), dsn: dsn})
		}
	}
	if pg == "" {
		fmt.Println("TEST_POSTGRES_DSN is not set: PostgreSQL is not measured")
	}
	fmt.Printf("vm-bench: %d connections, %d rounds of %s per case and side, GOMAXPROCS of this machine: %d cores\n\n", *conns, *rounds, *round, numCPU())
	began := time.Now()
	for _, ds := range sets {
		if err := bench(ds); err != nil {
			return fmt.Errorf("%s, %d validators: %w", ds.db, ds.n, err)
		}
	}
	if *bursts > 0 {
		fmt.Printf("## burst: %d clients create for %s on a new server\n\n", *bclients, *bursts)
		if err := burst(*bclients, 0, *bursts); err != nil {
			return fmt.Errorf("burst: %w", err)
		}
		if *bpaced > 0 {
			fmt.Printf("\n## paced burst: %d clients create %d over %s on a new server\n\n", *bclients, *bpaced, *bursts)
			if err := burst(*bclients, *bpaced, *bursts); err != nil {
				return fmt.Errorf("paced burst: %w", err)
			}
		}
	}
	if *convN > 0 {
		fmt.Printf("\n## convergence: %d clients create %d validators on a new server\n\n", *bclients, *convN)
		if err := converge(*bclients, *convN, *convMax); err != nil {
			return fmt.Errorf("convergence: %w", err)
		}
	}
	summary()
	fmt.Printf("\nvm-bench took %s.\n", time.Since(began).Round(time.Second))
	return nil
}

// benchDatabase creates (once) the database of a PostgreSQL data set on the
// TEST_POSTGRES_DSN server and returns its DSN.
func benchDatabase(dsn string, n int) (string, error) {
	admin, err := store.Open("postgres", dsn)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	name := fmt.Sprintf("vm_bench_%d", n)
	// Kept between runs: "already exists" (SQLSTATE 42P04) is the usual answer.
	if err := admin.Exec(context.Background(), "CREATE DATABASE "+name); err != nil && !strings.Contains(err.Error(), "42P04") {
		return "", err
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// server is a running validator-manager.
type server struct {
	cmd     *exec.Cmd
	base    string
	token   string
	debug   string // its profiling listener (host:port); the live heap is read there
	began   time.Time
	startup time.Duration // until it listens
	ready   time.Duration // until its health is UP
	// until the embedded control plane's kube-apiserver answers /readyz:
	// the part of ready that a real cluster, already running, does not
	// spend (0: not seen)
	controlPlane time.Duration
}

func start(ds dataset) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	// Every start has a profiling listener: its heap profile forces a
	// collection first, which is how the live heap is read.
	debug := *pprof
	if debug == "" {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		debug = fmt.Sprintf("127.0.0.1:%d", p)
	}
	args := []string{"serve", "--data-dir", ds.data, "--listen", addr, "--log.level", "warn",
		"--cluster.node.cpu", *nodeCPU, "--cluster.node.memory", *nodeMemory, "--cluster.node.pods", strconv.Itoa(*nodePods),
		"--server.pprof-listen", debug}
	cmd := exec.Command(*bin, args...)
	cmd.Env = append(os.Environ(), "VM_DATABASE_DSN="+ds.dsn)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// The server's log goes beside the data.
	logFile, err := os.Create(ds.data + ".log")
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd.Stderr = logFile
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, base: "http://" + addr, debug: debug, began: began}
	// serve prints its development token once it listens.
	tokens := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 64<<10)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); strings.Count(line, ".") == 2 && !strings.Contains(line, " ") && len(line) > 100 {
				tokens <- line
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case s.token = <-tokens:
		s.startup = time.Since(began)
	case <-time.After(60 * time.Second):
		s.stop()
		return nil, errors.New("server did not start within 60 s")
	}
	// It answers once its caches have synced and its first reconcile is
	// done: until then health is DOWN. A data directory seeded in the
	// database alone has no cluster objects yet: its first start creates
	// them (the embedded cluster's writes, about 2 ms each), later starts
	// find them in step.
	for deadline := time.Now().Add(30 * time.Minute); ; {
		if s.controlPlane == 0 && apiServerReady(ds.data) {
			s.controlPlane = time.Since(began)
		}
		resp, err := http.Get(s.base + "/actuator/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				s.ready = time.Since(began)
				break
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("server not healthy within 30 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s, nil
}

func (s *server) stop() {
	if s.cmd.ProcessState != nil {
		return // stopped already
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// seed fills the data set with n validators unless it has them. Up to
// -seed-api validators are created through the server's own create (16
// clients), so each has what a real create makes (its row, its identity
// provider's clients, its Secrets, its cluster objects) and a restart finds
// nothing to do; beyond, one is created so and the rest are its row under
// other names, imported through the store (their cluster objects come at
// the first start; they have no identity provider clients, so the intent
// controller keeps retrying them: the large sets measure the list, not the
// control plane).
func seed(ds dataset) error {
	st, err := openStore(ds)
	if err != nil {
		return err
	}
	_, total, _, err := st.ListPage(context.Background(), domain.ValidatorFilter{Page: domain.Page{Limit: 1}})
	st.Close()
	if err != nil || total >= int64(ds.n) {
		return err
	}
	fmt.Printf("seeding %s with %d validators...\n", ds.data, ds.n)
	srv, err := start(ds)
	if err != nil {
		return err
	}
	if ds.n <= *seedAPI {
		began := time.Now()
		// With custom authentication: a wallet user's bcrypt (tens of
		// milliseconds of CPU) would make seeding 10,000 take an hour.
		if _, err := createMany(srv, "node", customAuthBody, 16, ds.n, 0); err != nil {
			srv.stop()
			return err
		}
		fmt.Printf("created %d validators through the API in %s; waiting until none is PENDING and the server is idle (at most %s)...\n", ds.n, time.Since(began).Round(time.Second), *settle)
		for deadline := time.Now().Add(*settle); time.Now().Before(deadline); time.Sleep(5 * time.Second) {
			if pending, err := countPhase(srv, "PENDING"); err != nil || pending == 0 {
				break
			}
		}
		idleAfter(srv, time.Now(), time.Minute)
		srv.stop()
		return nil
	}
	const template = "bench-template"
	status, body, err := call(srv, http.MethodPost, "/api/validators", createBody(template))
	if err == nil && status != http.StatusCreated && status != http.StatusConflict {
		err = fmt.Errorf("create the template validator: %d %s", status, body)
	}
	srv.stop()
	if err != nil {
		return err
	}
	if st, err = openStore(ds); err != nil {
		return err
	}
	defer st.Close()
	ctx := context.Background()
	tmpl, err := st.GetValidator(ctx, template)
	if err != nil {
		return err
	}
	if err := st.DeleteValidator(ctx, template); err != nil {
		return err
	}
	vs := make([]domain.Validator, 0, ds.n)
	for i := range ds.n {
		v := tmpl
		v.Name = name(i)
		v.Spec = bytes.ReplaceAll(tmpl.Spec, []byte(`"`+template+`"`), []byte(`"`+v.Name+`"`))
		// The list view names the validator's onboarding Secret.
		v.ListView = bytes.ReplaceAll(tmpl.ListView, []byte(`"`+template+`-`), []byte(`"`+v.Name+`-`))
		v.Phase = []domain.Phase{domain.PhaseRunning, domain.PhasePending, domain.PhaseCompleted}[i%3]
		vs = append(vs, v)
	}
	for len(vs) > 0 {
		chunk := vs[:min(len(vs), 10000)]
		if err := st.ImportValidators(ctx, chunk); err != nil {
			return err
		}
		vs = vs[len(chunk):]
	}
	// The first start creates every validator's objects in the embedded
	// cluster: let that churn pass before measuring anything.
	fmt.Printf("converging the embedded cluster of %s (first start)...\n", ds.data)
	if srv, err = start(ds); err != nil {
		return err
	}
	time.Sleep(10 * time.Second)
	srv.stop()
	// What autovacuum does soon after a bulk load: statistics, and on
	// PostgreSQL the visibility map.
	if ds.db == "postgres" {
		return st.Exec(ctx, "VACUUM ANALYZE")
	}
	return st.Exec(ctx, "ANALYZE")
}

func name(i int) string { return fmt.Sprintf("node-%05d", i) }

func openStore(ds dataset) (*store.Store, error) {
	if ds.db == "postgres" {
		return store.Open("postgres", ds.dsn)
	}
	return store.Open("sqlite", filepath.Join(ds.data, "validator-manager.db"))
}

// createBody is a complete create payload: the one the tests create.
func createBody(name string) []byte {
	body, _ := json.Marshal(apitest.ValidatorPayload(name))
	return body
}

// customAuthBody is createBody with custom authentication (no wallet user).
func customAuthBody(name string) []byte {
	p := apitest.ValidatorPayload(name)
	p.CustomAuth = ptr(true)
	body, _ := json.Marshal(p)
	return body
}

func ptr[T any](v T) *T { return &v }

func call(s *server, method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// A case is one kind of request; path gives each request its own URL.
type benchCase struct {
	name   string
	status int
	auth   bool
	path   func(r *rand.Rand) string
	conns  int     // 0: -conns
	goal   float64 // least share of the baseline's throughput; 0: none
	p99x   float64 // most p99 as a multiple of the baseline's; 0: none
	// check, when set, refuses a captured answer that is not the case's
	// (the cheap read must find no rows)
	check func(body []byte) error
}

// cases are the request cases of a data set of total validators. The goals
// are the memory issue's: a 1.11 page of 50 at any offset ≥ 0.5 of the
// baseline with p99 ≤ 2× its, the cheap authenticated read ≥ 0.8.
func cases(total int, phase string, inPhase int) []benchCase {
	page := func(from int) func(*rand.Rand) string {
		return func(*rand.Rand) string { return fmt.Sprintf("/api/validators?limit=50&from=%d", from) }
	}
	anywhere := func(r *rand.Rand) string { return fmt.Sprintf("/api/validators?limit=50&from=%d", r.IntN(total-49)) }
	return []benchCase{
		{name: "GET /api/validators?limit=50&from=0 (1.11 list, first page)", status: http.StatusOK, auth: true, path: page(0), goal: 0.5, p99x: 2},
		{name: fmt.Sprintf("GET /api/validators?limit=50&from=%d (1.11 list, last full page)", total-50), status: http.StatusOK, auth: true, path: page(total - 50), goal: 0.5, p99x: 2},
		{name: "GET /api/validators?limit=50, from anywhere up to n-50", status: http.StatusOK, auth: true, path: anywhere, goal: 0.5, p99x: 2},
		// The same on one connection: the request's own latency, no queueing.
		{name: "the same, 1 connection", status: http.StatusOK, auth: true, path: anywhere, conns: 1},
		// The phase most validators are in.
		{name: "GET /api/validators?limit=50&status=<phase>, from anywhere", status: http.StatusOK, auth: true, path: func(r *rand.Rand) string {
			return fmt.Sprintf("/api/validators?limit=50&status=%s&from=%d", phase, r.IntN(max(1, inPhase-49)))
		}},
		{name: "GET /api/validators?limit=50&name=<4 digits> (substring filter)", status: http.StatusOK, auth: true, path: func(r *rand.Rand) string {
			return fmt.Sprintf("/api/validators?limit=50&name=%04d", r.IntN(10000))
		}},
		// Authentication, routing, validation, a handler and its query
		// on an empty table: the least work an authenticated call does.
		{name: "GET /api/remote-participants, no rows (the cheap authenticated read, 200)", status: http.StatusOK, auth: true, path: func(*rand.Rand) string {
			return "/api/remote-participants"
		}, goal: 0.8, check: noRows},
		// 2.0's authentication, then a miss in the Validator cache.
		{name: "GET /api/v1/validators/{name} of an unknown name (2.0 read, 404)", status: http.StatusNotFound, auth: true, path: func(*rand.Rand) string {
			return "/api/v1/validators/no-such-validator"
		}},
		{name: "GET /actuator/health", status: http.StatusOK, path: func(*rand.Rand) string { return "/actuator/health" }},
	}
}

// noRows refuses a list answer that has rows.
func noRows(body []byte) error {
	var page struct {
		TotalCount *int `json:"totalCount"`
	}
	if err := json.Unmarshal(body, &page); err != nil || page.TotalCount == nil || *page.TotalCount != 0 {
		return fmt.Errorf("want a list with no rows (totalCount 0), got %s", body)
	}
	return nil
}

// largestPhase is the phase most validators are in, and how many are.
func largestPhase(s *server) (string, int, error) {
	best, most := "RUNNING", 0
	for _, phase := range []string{"PENDING", "RUNNING", "COMPLETED"} {
		n, err := countPhase(s, phase)
		if err != nil {
			return "", 0, err
		}
		if n > most {
			best, most = phase, n
		}
	}
	return best, most, nil
}

// countPhase is the 1.11 list's totalCount of a phase ("": of all).
func countPhase(s *server, phase string) (int, error) {
	path := "/api/validators?limit=1"
	if phase != "" {
		path += "&status=" + phase
	}
	status, body, err := call(s, http.MethodGet, path, nil)
	if err != nil || status != http.StatusOK {
		return 0, fmt.Errorf("list %s: %d %s %v", phase, status, body, err)
	}
	var page struct {
		TotalCount int `json:"totalCount"`
	}
	err = json.Unmarshal(body, &page)
	return page.TotalCount, err
}

// captured is what the baseline answers for one request URI (path and
// query), and for any other query on the path of the first captured there.
type captured struct {
	URI         string `json:"uri"`
	Status      int    `json:"status"`
	ContentType string `json:"contentType"`
	Body        []byte `json:"body"`
	Auth        bool   `json:"auth"`
}

type baselineFile struct {
	Token     string     `json:"token"`
	Listen    string     `json:"listen"`
	Responses []captured `json:"responses"`
}

// serveBaseline is the bare net/http server: a trivial bearer check, then
// the captured bytes.
func serveBaseline(file string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var cfg baselineFile
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return err
	}
	want := "Bearer " + cfg.Token
	byURI, byPath := map[string]captured{}, map[string]captured{}
	for _, c := range cfg.Responses {
		byURI[c.URI] = c
		path, _, _ := strings.Cut(c.URI, "?")
		if _, ok := byPath[path]; !ok {
			byPath[path] = c
		}
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := byURI[r.RequestURI]
		if !ok {
			if c, ok = byPath[r.URL.Path]; !ok {
				http.NotFound(w, r)
				return
			}
		}
		if c.Auth && r.Header.Get("Authorization") != want {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", c.ContentType)
		w.WriteHeader(c.Status)
		_, _ = w.Write(c.Body)
	})
	srv := &http.Server{Addr: cfg.Listen, Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}

func startBaseline(token string, responses []captured) (*server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	raw, _ := json.Marshal(baselineFile{Token: token, Listen: addr, Responses: responses})
	f := filepath.Join(*dir, "baseline.json")
	if err := os.WriteFile(f, raw, 0o600); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-baseline", f)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, base: "http://" + addr, token: token}
	for range 200 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return s, nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	s.stop()
	return nil, errors.New("baseline did not start")
}

type result struct {
	requests int
	errors   int
	elapsed  time.Duration
	lat      []time.Duration
	cpu      time.Duration
}

func (r *result) add(o result) {
	r.requests += o.requests
	r.errors += o.errors
	r.elapsed += o.elapsed
	r.lat = append(r.lat, o.lat...)
	r.cpu += o.cpu
}

func (r result) throughput() float64 { return float64(r.requests) / r.elapsed.Seconds() }

func (r result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	slices.Sort(r.lat)
	return r.lat[min(len(r.lat)-1, int(float64(len(r.lat))*p))]
}

// load drives s with the case's connections for one round.
func load(s *server, c benchCase, seed uint64) result {
	n := *conns
	if c.conns > 0 {
		n = c.conns
	}
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var sent atomic.Int64
	var mu sync.Mutex
	var res result
	cpu0 := cpuTime(s.cmd.Process.Pid)
	deadline := time.Now().Add(*round)
	began := time.Now()
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			var lat []time.Duration
			errs := 0
			for time.Now().Before(deadline) && sent.Add(1) <= int64(*maxReq) {
				req, _ := http.NewRequest(http.MethodGet, s.base+c.path(r), nil)
				if c.auth {
					req.Header.Set("Authorization", "Bearer "+s.token)
				}
				t0 := time.Now()
				resp, err := client.Do(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != c.status {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				lat = append(lat, time.Since(t0))
				if err != nil {
					errs++
				}
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.errors += errs
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(began)
	res.requests = len(res.lat)
	res.cpu = cpuTime(s.cmd.Process.Pid) - cpu0
	return res
}

// cpuTime is a process's user and system CPU so far (/proc/<pid>/stat).
func cpuTime(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ = 100
}

// resident is a process's resident set, in MB (/proc/<pid>/status): now,
// at its peak, and what it is made of now: anonymous memory (the Go heap,
// stacks, C allocations) and pages of files (the binary's code and data).
type resident struct{ rss, peak, anon, file float64 }

func memory(pid int) resident {
	var m resident
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m
	}
	fields := map[string]*float64{"VmRSS:": &m.rss, "VmHWM:": &m.peak, "RssAnon:": &m.anon, "RssFile:": &m.file}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && fields[f[0]] != nil {
			kb, _ := strconv.ParseFloat(f[1], 64)
			*fields[f[0]] = kb / 1024
		}
	}
	return m
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

func bench(ds dataset) error {
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	if err := seed(ds); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	empty, err := emptyHeap()
	if err != nil {
		return fmt.Errorf("the empty server's live heap: %w", err)
	}
	srv, err := start(ds)
	if err != nil {
		return err
	}
	defer srv.stop()
	if err := restarted(ds, srv); err != nil {
		return err
	}
	if err := settled(ds, srv); err != nil {
		return err
	}
	rss0 := memory(srv.cmd.Process.Pid).rss

	total, err := countPhase(srv, "")
	if err != nil {
		return err
	}
	phase, inPhase, err := largestPhase(srv)
	if err != nil {
		return err
	}
	cs := cases(total, phase, inPhase)
	var responses []captured
	for _, c := range cs {
		path := c.path(rand.New(rand.NewPCG(7, 7)))
		status, body, err := call(srv, http.MethodGet, path, nil)
		if err != nil {
			return err
		}
		if status != c.status {
			return fmt.Errorf("%s: got %d %s, want %d", path, status, body, c.status)
		}
		if c.check != nil {
			if err := c.check(body); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		responses = append(responses, captured{URI: path, Status: status, ContentType: "application/json", Body: body, Auth: c.auth})
	}
	base, err := startBaseline(srv.token, responses)
	if err != nil {
		return err
	}
	defer base.stop()

	tag := fmt.Sprintf("%s, %d", ds.db, ds.n)
	fmt.Printf("\n## %s, %d validators (start-up %s, RSS at start %.0f MB)\n\n", ds.db, ds.n, ms(srv.startup), rss0)
	fmt.Println("| case | baseline req/s | server req/s | ratio | baseline p50 / p99 | server p50 / p99 | server CPU per request | errors | goal | met |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for i, c := range cs {
		if !strings.Contains(c.name, *only) {
			continue
		}
		var b, s result
		for r := range *rounds {
			seed := uint64(i*100 + r)
			b.add(load(base, c, seed))
			var profiled chan error
			if r == 0 && *profiles != "" && *pprof != "" {
				profiled = make(chan error, 1)
				go func() {
					profiled <- cpuProfile(filepath.Join(*profiles, fmt.Sprintf("%s-%d-case%d.pprof", ds.db, ds.n, i)))
				}()
			}
			s.add(load(srv, c, seed))
			if profiled != nil {
				if err := <-profiled; err != nil {
					return fmt.Errorf("cpu profile: %w", err)
				}
			}
		}
		ratio := s.throughput() / b.throughput()
		p99x := float64(s.pct(0.99)) / float64(max(1, b.pct(0.99)))
		goal, met := "—", "—"
		if c.goal > 0 {
			goal = fmt.Sprintf("≥ %.1f of the baseline", c.goal)
			ok := ratio >= c.goal && s.errors == 0
			if c.p99x > 0 {
				goal += fmt.Sprintf(", p99 ≤ %g× its", c.p99x)
				ok = ok && p99x <= c.p99x
			}
			met = yes(ok)
		}
		fmt.Printf("| %s | %.0f | %.0f | %.3f | %s / %s | %s / %s (%.1f×) | %s | %d / %d | %s | %s |\n",
			c.name, b.throughput(), s.throughput(), ratio,
			ms(b.pct(0.5)), ms(b.pct(0.99)), ms(s.pct(0.5)), ms(s.pct(0.99)), p99x,
			ms(s.cpu/time.Duration(max(1, s.requests))), b.errors, s.errors, goal, met)
		if c.goal > 0 {
			figures = append(figures, figure{c.name, tag, goal,
				fmt.Sprintf("%.0f/s, p99 %s", b.throughput(), ms(b.pct(0.99))),
				fmt.Sprintf("%.3f (%.0f/s, p99 %s = %.1f× the baseline's, CPU %s a request)", ratio, s.throughput(), ms(s.pct(0.99)), p99x, ms(s.cpu/time.Duration(max(1, s.requests)))),
				met})
		}
	}
	m := memory(srv.cmd.Process.Pid)
	rss, peak := m.rss, m.peak
	fmt.Printf("\nServer RSS after the rounds: %.0f MB (peak %.0f MB; anonymous %.0f MB, file-backed %.0f MB).\n", rss, peak, m.anon, m.file)
	// The goal is set at 1,000 validators only; other sizes are reported.
	rssName, rssText := "server RSS (its own process, /proc VmRSS) after the rounds", fmt.Sprintf("%.0f MB (peak %.0f MB)", rss, peak)
	if ds.n == 1000 {
		report(rssName, tag, "≤ 200 MB", "", rssText, rss <= 200)
	} else {
		figures = append(figures, figure{rssName, tag, "— (≤ 200 MB at 1,000)", "", rssText, "—"})
	}
	heap, err := liveHeap(srv)
	if err != nil {
		return fmt.Errorf("live heap: %w", err)
	}
	figures = append(figures, figure{"live heap per validator (after a forced GC, less the empty server's)", tag, "— (reported)",
		fmt.Sprintf("empty server %.1f MB", mb(empty)),
		fmt.Sprintf("%.1f KB (%.1f MB live at %d validators)", float64(heap-empty)/1024/float64(total), mb(heap), total), "—"})
	fmt.Printf("- live heap after a forced GC (%s): %.1f MB; the empty server's %.1f MB; per validator %.1f KB (%d validators)\n",
		tag, mb(heap), mb(empty), float64(heap-empty)/1024/float64(total), total)

	if *creates > 0 {
		// Release 1.11 has no delete: the rows go through the store
		// afterwards (the simulated cluster keeps its few objects).
		prefix := fmt.Sprintf("bc%d-", time.Now().Unix()%1000000)
		// What the server spends without requests (at 10,000 its workload
		// controller may still be applying the seeded set's workloads),
		// over a window just before the creates, is subtracted from
		// theirs at the same rate.
		pid := srv.cmd.Process.Pid
		b0, bt := cpuTime(pid), time.Now()
		time.Sleep(3 * time.Second)
		background := (cpuTime(pid) - b0).Seconds() / time.Since(bt).Seconds() // cores
		cpu0 := cpuTime(pid)
		t0 := time.Now()
		for i := range *creates {
			status, body, err := call(srv, http.MethodPost, "/api/validators", createBody(fmt.Sprint(prefix, i)))
			if err != nil || status != http.StatusCreated {
				return fmt.Errorf("create: %d %s %v", status, body, err)
			}
		}
		wall := time.Since(t0)
		gross := cpuTime(pid) - cpu0
		cpu := max(0, gross-time.Duration(background*float64(wall)))
		st, err := openStore(ds)
		if err != nil {
			return err
		}
		for i := range *creates {
			_ = st.DeleteValidator(context.Background(), fmt.Sprint(prefix, i))
		}
		st.Close()
		// Rows deleted behind the server's back are noticed at its next
		// start, which deletes their cluster objects: that start is made
		// here, so that the next run's restart finds nothing to do.
		srv.stop()
		if again, err := start(ds); err == nil {
			idleAfter(again, time.Now(), time.Minute)
			again.stop()
		}
		fmt.Printf("Creates, one at a time: %d in %s, server CPU %s per create (%s with the server's background work of %.0f %% of a core before them).\n",
			*creates, wall.Round(time.Millisecond), ms(cpu/time.Duration(*creates)), ms(gross/time.Duration(*creates)), 100*background)
		rate := float64(*creates) / wall.Seconds()
		figures = append(figures, figure{"creates through 1.11, one client (server CPU per create)", tag, "≥ 25/s, CPU flat from 1,000 to 10,000", "",
			fmt.Sprintf("%.1f/s (%s)", rate, ms(cpu/time.Duration(*creates))), yes(rate >= 25)})
	}
	fmt.Println()
	return nil
}

// settled waits, on a data set seeded through the API, until no validator
// is PENDING (at most -seed-settle) and the server is idle: the request
// cases measure a server whose provisioning is done. The larger, imported
// sets keep a third PENDING by design.
func settled(ds dataset, srv *server) error {
	if ds.n > *seedAPI {
		return nil
	}
	began := time.Now()
	pending, err := countPhase(srv, "PENDING")
	for deadline := began.Add(*settle); err == nil && pending > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Second)
		pending, err = countPhase(srv, "PENDING")
	}
	if err != nil {
		return err
	}
	_, idle := idleAfter(srv, time.Now(), time.Minute)
	fmt.Printf("- provisioning settled (%s, %d): %d PENDING, idle: %v, after %s\n", ds.db, ds.n, pending, idle, secs(time.Since(began)))
	return nil
}

// emptied is the empty server's live heap, measured once a run.
var emptied struct {
	bytes int64
	err   error
	once  sync.Once
}

// emptyHeap is the live heap of a server on a new, empty data set once it
// is idle: what a validator's share is counted from.
func emptyHeap() (int64, error) {
	emptied.once.Do(func() {
		_, srv, done, err := fresh("empty")
		if err != nil {
			emptied.err = err
			return
		}
		defer done()
		// What the measured server's rounds warm (the request path, the
		// queries) is warmed here too, once each.
		for _, path := range []string{"/api/validators?limit=50", "/api/validators?limit=50&status=RUNNING", "/api/validators?limit=50&name=0001",
			"/api/remote-participants", "/api/v1/validators/no-such-validator", "/actuator/health"} {
			if _, _, err := call(srv, http.MethodGet, path, nil); err != nil {
				emptied.err = err
				return
			}
		}
		idleAfter(srv, time.Now(), time.Minute)
		emptied.bytes, emptied.err = liveHeap(srv)
	})
	return emptied.bytes, emptied.err
}

// liveHeap is the heap the server's last collection found live
// (go_gc_heap_live_bytes in its metrics), read after its profiling
// listener forced a collection (a heap profile with gc=1). Unlike the
// MemStats' HeapAlloc, it does not count what a concurrent reconcile
// allocated during and after that collection. Read twice a second apart,
// the second time after objects freed by the first collection's finalizers
// and the sync.Pools it emptied are gone too.
func liveHeap(s *server) (int64, error) {
	var heap int64
	for i := range 2 {
		if i > 0 {
			time.Sleep(time.Second)
		}
		resp, err := http.Get("http://" + s.debug + "/debug/pprof/heap?gc=1")
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("%s: %s", s.debug, resp.Status)
		}
		status, metrics, err := call(s, http.MethodGet, "/actuator/prometheus", nil)
		if err != nil {
			return 0, err
		}
		if status != http.StatusOK {
			return 0, fmt.Errorf("/actuator/prometheus: %d %s", status, metrics)
		}
		_, rest, ok := strings.Cut(string(metrics), "\ngo_gc_heap_live_bytes ")
		if !ok {
			return 0, errors.New("no go_gc_heap_live_bytes in the server's metrics")
		}
		v, _, _ := strings.Cut(rest, "\n")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, err
		}
		heap = int64(f)
	}
	return heap, nil
}

func mb(bytes int64) float64 { return float64(bytes) / (1 << 20) }

// cpuProfile takes a CPU profile of the server, as long as a round, from
// its profiling listener.
func cpuProfile(file string) error { return cpuProfileFor(file, *round) }

// cpuProfileFor writes a CPU profile of the server over d into file.
func cpuProfileFor(file string, d time.Duration) error {
	secs := max(1, int(d.Seconds()))
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", *pprof, secs))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", *pprof, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func yes(met bool) string {
	if met {
		return "yes"
	}
	return "no"
}

func numCPU() int {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(raw), "processor\t")
}
