# validator-manager: `make run` starts the embedded default, `make test` runs every check.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
BIN     := bin/validator-manager
REDOCLY := REDOCLY_TELEMETRY=off node_modules/.bin/redocly
SPECS   := openapi/management-1.11.yaml openapi/platform-2.0.yaml

.PHONY: run build engine prereqs prereqs-test setup generate check-generated lint test test-go bench clean

## run: start the server on its embedded default (SQLite, embedded cluster, dev tokens in ./data).
## Configuration as documented: VM_LISTEN, VM_DATA_DIR, ... (defaults 127.0.0.1:8080 and ./data),
## or ARGS="--listen 127.0.0.1:9090".
run: build engine
	$(BIN) serve $(ARGS)

## engine: put etcd, kube-apiserver and kube-controller-manager once into the user cache
## (~/.cache/validator-manager/envtest/<version>), where `serve` on the embedded default finds
## them: downloaded and checked against their published sha512 (setup-envtest's index and archive,
## Kubernetes' release binary), built from source only when that fails (cmd/engine); one progress
## line per stage with the elapsed seconds (README: timings of both paths).
engine:
	@$(GO) run ./cmd/engine >/dev/null

## prereqs: check Go and a C compiler (and for `make test`, Node.js), saying what to install
prereqs:
	@GO="$(GO)" bash .ci/prereqs run
prereqs-test:
	@GO="$(GO)" bash .ci/prereqs test

## build: compile the binary into bin/, a line per stage with its elapsed time (the first build on
## cold caches downloads the modules and compiles SQLite's C code: a few minutes)
build: prereqs
	@GO="$(GO)" LDFLAGS="$(LDFLAGS)" BIN="$(BIN)" bash .ci/build

## setup: what make test needs beyond make run, made ready alike on every machine: Chromium and the
## PostgreSQL client installed when missing (as root), the local PostgreSQL started (.ci/setup)
setup:
	@bash .ci/setup

## generate: regenerate gen/ from the OpenAPI documents (both releases and the upstream subsets in openapi/upstream/),
## the participant admin gRPC subset in openapi/proto/ (buf and the protoc plugins, all Go modules run with
## `go run`: no protoc to install), and the API types' deepcopy, apply configurations (gen/applyconfiguration,
## for typed server-side apply) and the Validator CRD (deploy/crds) from impl/apis with controller-gen
generate:
	rm -rf gen/applyconfiguration
	$(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen object applyconfiguration paths=./impl/apis/... \
	  crd:crdVersions=v1 output:crd:dir=deploy/crds
	cp deploy/crds/*.yaml deploy/helm/validator-manager/crds/
	cd gen/managementapi && $(GO) generate .
	cd gen/platformapi && $(GO) generate .
	cd gen/upstream/ledgerapi && $(GO) generate .
	cd gen/upstream/scanapi && $(GO) generate .
	cd gen/upstream/validatorapi && $(GO) generate .
	cd gen/upstream/adminapi && $(GO) generate .

## check-generated: fail when `make generate` fails or changes anything (gen/, deploy/crds, the deepcopy files)
check-generated:
	@MAKE="$(MAKE)" GO="$(GO)" bash .ci/check-generated

node_modules/.bin/redocly: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

## lint: OpenAPI lint of both contracts, gofmt, go vet
lint: prereqs-test node_modules/.bin/redocly
	$(REDOCLY) lint --config .ci/redocly.yaml $(SPECS)
	@out=$$(git ls-files -co --exclude-standard '*.go' | while read -r f; do [ ! -e "$$f" ] || echo "$$f"; done | \
	  xargs gofmt -l) || { echo "gofmt failed (output above)"; exit 1; }; \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## TEST_P: how many packages build or test at once. Go's default is one per core, but most packages
## spend their time waiting on clocks (a CronJob's minute, resyncs, fault windows) while the cores idle.
TEST_P ?= 4

## test-go: the Go test suites (PostgreSQL when TEST_POSTGRES_DSN is set; browser test when chromium is installed)
test-go:
	@dsn="$$(bash .ci/setup dsn)"; echo "store suite: SQLite$${dsn:+ and PostgreSQL}"
	@echo "control plane: etcd, kube-apiserver and kube-controller-manager from $${KUBEBUILDER_ASSETS:-the user cache (make engine)}: the embedded default end to end, the engine and node simulator, the controllers and the cluster gateway"
	@command -v chromium >/dev/null && echo "docs page: headless Chromium" || echo "docs page: browser test skipped (no chromium)"
	@echo "TypeScript client: openapi-typescript, tsc and openapi-fetch from node_modules (npm ci)"
	@echo "CI scripts (cmd/ci): check-generated on copies of the tree (make generate three times), the stages' stop on failure"
	@assets="$${KUBEBUILDER_ASSETS:-$$($(GO) run ./cmd/engine)}" && dsn="$$(bash .ci/setup dsn)" && \
	  KUBEBUILDER_ASSETS="$$assets" TEST_POSTGRES_DSN="$$dsn" bash -o pipefail -c '$(GO) test -race -count=1 -p $(TEST_P) -json ./... 2>&1 | node .ci/test-summary.mjs'

## test: everything CI checks; prints each stage's duration and ends with the skipped tests (and
## why) and the line `N passed, N failed, N skipped`
test:
	@bash .ci/stages "$(MAKE) --no-print-directory" setup lint check-generated engine test-go

## bench: the figures of docs/benchmarks.md beside their goals (not part of test): on seeded data sets of
## BENCH_SIZES validators (kept in bin/bench; PostgreSQL too when TEST_POSTGRES_DSN is set) a restart's
## readiness, writes and idle time, list pages and the cheap authenticated read against a bare echo
## baseline, RSS, creates with one client; then a burst of creates and 1,000 created → RUNNING on new
## servers. About 15 minutes once seeded (docs/benchmarks.md); BENCH_FLAGS selects cases
## (e.g. BENCH_FLAGS="-burst 0 -converge 0"; bin/vm-bench -h lists them).
BENCH_SIZES ?= 1000,10000
BENCH_FLAGS ?=
bench: build
	$(GO) build -o bin/vm-bench ./cmd/vm-bench
	bin/vm-bench -bin $(BIN) -dir bin/bench -sizes $(BENCH_SIZES) $(BENCH_FLAGS)

clean:
	rm -rf bin
