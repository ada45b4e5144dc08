# lbkit build targets. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

# Every Go module in the repository (the core and each adapter).
MODULES := $(shell find . -name go.mod -not -path './.git/*' -printf '%h\n' | sort)
# Fuzz budget per target, as an execution count: a duration ("3s") makes go1.26's
# fuzz coordinator fail at random with "context deadline exceeded" when the
# deadline races a worker (golang/go#75804, fixed in go1.27); a count has no deadline.
FUZZTIME ?= 20000x
BENCHTIME ?= 1s
BENCH ?= .
STATICCHECK_VERSION ?= v0.8.2
# golangci-lint runs only forbidigo (.golangci.yml): the injected-clock rule.
GOLANGCI_LINT_VERSION ?= v2.15.0
GOBIN ?= $(shell go env GOPATH)/bin

.PHONY: help
help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

.PHONY: demo
demo: deps ## Run the demo: outlier ejection and failover between priorities over real HTTP backends (about 30 s).
	go run ./cmd/lbdemo $(DEMOFLAGS)

.PHONY: demo-xds
demo-xds: deps ## Run the xDS demo: an in-process control plane pushes snapshots (weights, endpoints, priorities, a bad one, a canary split shifted by route pushes) and the traffic follows (about 30 s).
	cd adapters/xds && go run ./cmd/xdsdemo $(DEMOFLAGS)

.PHONY: sim
sim: deps ## Run the simulator's scenarios (sim/scenarios) in full into sim/results (JSON, SVG, results.md), check docs/simulation.md shows that table, then the long checks: queueing theory, S3's in-flight balance, p99 against the steady state and new backends' shares against the ramp.
	@mkdir -p sim/results
	set -o pipefail; go run ./cmd/lbsim run -out sim/results sim/scenarios/*.json | tee sim/results/results.md
	go test -count=1 -run 'TestDocsShowTheResultsTable' ./cmd/lbsim
	set -o pipefail; go test -count=1 -run 'TestQueueingTheory|TestS3InFlightBalance|TestS3P99AgainstSteadyState|TestS3ShareFollowsTheRamp' -v ./sim -args -long | grep -E 'samples|(inflight|s3p99|s3fit)_test.go|^(ok|FAIL|---)'

.PHONY: deps
deps: ## Download every module's dependencies.
	@for m in $(MODULES); do (cd $$m && go mod download) || exit 1; done

# make test sets GORACE's atexit_sleep_ms to 0: the race detector otherwise
# sleeps 1 s at the end of every test binary (38 of them), after the
# testing package has already failed any test that raced, and every test
# package that starts goroutines checks with goleak that none is left
# (docs/testing.md). A GORACE of your own is applied after it.
.PHONY: test
test: deps lint ## gofmt, vet, staticcheck, the injected-clock rule, race-enabled tests of every module, short fuzz runs.
	@for m in $(MODULES); do echo "== $$m"; (cd $$m && GORACE="atexit_sleep_ms=0 $$GORACE" go test -race -count=1 ./...) || exit 1; done
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)

.PHONY: stress
stress: deps ## The long fault and load suite (internal/stress and adapters/xds with -long, race on, a few minutes), then the once-flaky tests many times at -cpu 1,2,4.
	go test -race -count=1 -v -timeout 30m ./internal/stress -args -long
	go test -race -count=200 -cpu 1,2,4 -run 'TestReadyBurstCoalesces|TestBurstEndingInStateChange' ./lb/wrr
	go test -race -count=200 -cpu 1,2,4 -run 'TestUnchangedFileIsNotPublished' ./lb/resolver/eds
	go test -race -count=200 -cpu 1,2,4 -run 'TestTransportCallsDoneWithTheOutcome|TestUnreachableBackendRequestTriesAnotherWhenSafe' ./adapters/nethttp
	go test -race -count=20 -cpu 1,2,4 -run 'TestRollingRestartBehindDNS|TestDNSOutageKeepsServingAndTheSnapshotSaysWhy|TestLostConnectionRequestTriesAnotherWhenReplayable' ./adapters/nethttp
	go test -race -count=50 -cpu 1,2,4 -run 'TestPollingSeesAddressesAddedAndRemoved|TestBrokenServerKeepsTheLastGoodAddressesAndSaysWhy' ./lb/resolver/dns
	cd adapters/xds && go test -race -count=1 -v -run 'TestStress' . -args -long
	cd adapters/xds && go test -race -count=20 -cpu 1,2,4 .
	set -o pipefail; go test -count=1 -v -run 'TestDisruptionAndSpread|TestSpread' ./lb/consistenthash -args -long | grep -E 'moved|share|^(ok|FAIL|---)'

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (default 20000x: executions) each.
	@./scripts/fuzz.sh $(FUZZTIME)

.PHONY: bench
bench: deps ## Run every benchmark (with its baselines) once; BENCH=regexp to choose (the grpc-go EDF ones take 15-30 min).
	@for m in $(MODULES); do (cd $$m && go test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) ./...) || exit 1; done

.PHONY: lint
lint: deps ## gofmt, go vet, staticcheck and the injected-clock rule (golangci-lint's forbidigo), pinned.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo 'gofmt: files above need formatting'; exit 1; }
	GOBIN=$(GOBIN) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	GOBIN=$(GOBIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	@for m in $(MODULES); do (cd $$m && go vet ./... && $(GOBIN)/staticcheck ./...) || exit 1; done
	@./scripts/clockcheck.sh $(GOBIN)/golangci-lint

.PHONY: cover
cover: deps ## Test coverage of every module, summarised per function.
	@for m in $(MODULES); do (cd $$m && go test -count=1 -coverprofile=cover.out ./... && go tool cover -func=cover.out | tail -n 1 && rm -f cover.out) || exit 1; done
