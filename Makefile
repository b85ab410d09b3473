# validator-manager: `make run` starts the embedded default, `make test` runs every check.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
BIN     := bin/validator-manager
REDOCLY := REDOCLY_TELEMETRY=off node_modules/.bin/redocly
SPECS   := openapi/management-1.11.yaml openapi/platform-2.0.yaml

.PHONY: run build generate check-generated lint test test-go bench clean

## run: start the server on its embedded default (SQLite, simulated cluster, dev tokens in ./data)
run: build
	$(BIN) serve --listen 127.0.0.1:8080 --data-dir ./data

## build: compile the binary into bin/
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/validator-manager

## generate: regenerate gen/ from the OpenAPI documents
generate:
	cd gen/managementapi && $(GO) generate .
	cd gen/platformapi && $(GO) generate .

## check-generated: fail when gen/ is not what `make generate` produces
check-generated:
	@tmp=$$(mktemp -d) && cp -r gen $$tmp/ && $(MAKE) --no-print-directory generate >/dev/null && \
	  if ! diff -r $$tmp/gen gen >/dev/null; then diff -r $$tmp/gen gen | head -40; echo "gen/ is stale: run make generate and commit"; rm -rf $$tmp; exit 1; fi; rm -rf $$tmp

node_modules/.bin/redocly: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

## lint: OpenAPI lint of both contracts, gofmt, go vet
lint: node_modules/.bin/redocly
	$(REDOCLY) lint $(SPECS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

## test-go: the Go test suites (PostgreSQL when TEST_POSTGRES_DSN is set; browser test when chromium is installed)
test-go:
	@echo "store suite: SQLite$${TEST_POSTGRES_DSN:+ and PostgreSQL (TEST_POSTGRES_DSN)}"
	@if [ -n "$$KUBEBUILDER_ASSETS" ]; then echo "cluster gateway suite: real kube-apiserver and etcd (KUBEBUILDER_ASSETS=$$KUBEBUILDER_ASSETS)"; \
	  else echo "cluster gateway suite: client-go fakes (set KUBEBUILDER_ASSETS=\$$(bash testdata/envtest/build.sh) for a real API server)"; fi
	@command -v chromium >/dev/null && echo "docs page: headless Chromium" || echo "docs page: browser test skipped (no chromium)"
	$(GO) test -race -count=1 ./...

## test: everything CI checks
test: lint check-generated test-go

## bench: load benchmark of the server against a bare echo baseline (not part of test; PostgreSQL too when TEST_POSTGRES_DSN is set; about 5 minutes, seeded data kept in bin/bench)
bench: build
	$(GO) build -o bin/vm-bench ./cmd/vm-bench
	bin/vm-bench -bin $(BIN) -dir bin/bench

clean:
	rm -rf bin
