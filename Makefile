# qk — build, test and tooling targets. `make test` is the one command that
# runs everything CI runs; see README.md.

GO        ?= go
BIN       ?= bin/qk
PKGS      ?= ./...
FUZZTIME  ?= 30s
FUZZTIME_SHORT ?= 4000x
# Packages whose fuzz targets `make test` runs briefly: the decoders a
# client's bytes reach (frame stream and header, every request API).
FUZZ_SHORT_PKGS ?= ./broker ./broker/network ./broker/api
BENCHTIME ?= 1s
BENCHCOUNT ?= 5
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS   := -X main.version=$(VERSION)

.PHONY: all build run test test-unit test-integration deps lint fuzz fuzz-short bench bench-go bench-suite bench-cluster bench-txn bench-security golden completions docs clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/qk

# A single broker with the embedded defaults: PLAINTEXT://127.0.0.1:9092,
# data and metadata in ./qk-data. Ctrl-C stops it cleanly.
run: build
	./$(BIN) broker start

# Everything CI runs: system packages, lint, build, unit tests with the race
# detector, a short fuzz pass, then integration and end-to-end tests.
test: deps lint build test-unit fuzz-short test-integration

deps:
	@scripts/ensure-deps.sh

test-unit:
	$(GO) test -race -short -timeout 15m $(PKGS)

test-integration:
	$(GO) test -tags integration -timeout 15m $(PKGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags integration $(PKGS)
	@if command -v staticcheck >/dev/null 2>&1; then staticcheck $(PKGS); fi

# Each fuzz target for FUZZTIME (default 30 s). Targets are discovered, so a
# new Fuzz function is fuzzed without editing this file.
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$t"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

# The fuzz targets of FUZZ_SHORT_PKGS for FUZZTIME_SHORT each: a count of
# inputs (4000x), not a duration, because Go 1.26's fuzz coordinator can
# fail a target with a bare "context deadline exceeded" when a duration
# runs out while a worker is mid-input (golang/go#75804, fixed in Go 1.27);
# a count has no deadline to race. 9 targets, about a minute on two cores
# (see README.md). Their seed corpora also run in every plain `go test`.
fuzz-short:
	@$(MAKE) --no-print-directory fuzz PKGS="$(FUZZ_SHORT_PKGS)" FUZZTIME=$(FUZZTIME_SHORT)

# `bench` runs both benchmark kinds below.
bench: bench-go bench-suite

# Benchmarks of the code paths, BENCHCOUNT runs each, to bench/<date>.txt for
# benchstat.
bench-go:
	@mkdir -p bench
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) $(PKGS) | tee bench/$$(date +%Y-%m-%d).txt

# The whole-broker suite (bench/suite): qk, a kfake peer and kfake's producer
# and consumer ceilings, each its own process, driven by `qk perf` processes;
# records/s, MiB/s, p50/p99/p99.9, broker CPU-seconds per GiB and ratios,
# median of 5 runs, and the targets checklist, as Markdown in
# bench/RESULTS.md. BENCHFLAGS passes options, e.g. "-only 'produce 1 KiB'
# -runs 3"; `go run ./bench/suite -quick` checks the suite works in seconds
# without overwriting the results.
bench-suite:
	$(GO) run ./bench/suite $(BENCHFLAGS) -o bench/RESULTS.md

# The replication benchmark (bench/cluster): a real ZooKeeper and three
# `qk broker start` processes; RF 3 acks=all against RF 1 acks=1 throughput
# (ratio per run and median), broker CPU-seconds per GiB for the leader and
# each follower, follower lag under load, kill -9 failover time with 18 s
# and 6 s ZooKeeper sessions (with a no-loss check) and the unavailability
# around a controlled shutdown, as Markdown in bench/CLUSTER.md. Takes about
# 4-5 minutes on a quiet machine (1 GiB per throughput run, 3 GiB written at
# RF 3, deleted after each run); `go run ./bench/cluster -quick` checks it
# works in about 15 s without writing the file.
bench-cluster: build
	$(GO) run ./bench/cluster -qk $(BIN) $(BENCHFLAGS) -o bench/CLUSTER.md

# The transactions benchmark (bench/txn): a real ZooKeeper and three
# `qk broker start` processes; 1 KiB records from a transactional `qk perf
# produce` (a commit every 100 ms) against the same producer idempotent but
# not transactional, RF 3 (ratio per run and median, broker CPU-seconds per
# GiB); `qk perf consume` read_committed against read_uncommitted over a
# topic of committed and aborted transactions; EndTxn latency p50/p99 on
# RF 3 from a franz-go transactional producer; as Markdown in bench/TXN.md.
# BENCHFLAGS passes options, e.g. "-runs 3" or "-only endtxn" or "-set
# key=value" (a broker setting). About 6 minutes on a quiet machine (a
# 20 GiB page-cache ballast, 12 GiB produced, a 3.3 GiB topic read 12
# times); `go run ./bench/txn -quick` checks it works in about 30 s
# without writing the file.
bench-txn: build
	$(GO) run ./bench/txn -qk $(BIN) $(BENCHFLAGS) -o bench/TXN.md

# The TLS and SASL benchmark (bench/security): one `qk broker start` with
# PLAINTEXT, SSL and SASL_SSL (SCRAM-SHA-512) listeners; 1 KiB produce and
# consume over each, records/s, MB/s, broker CPU-seconds per GiB and the
# SSL/PLAINTEXT and SASL_SSL/PLAINTEXT ratios per run and their median,
# as Markdown in bench/SECURITY.md, with the broker/network micro-benchmark
# (FetchTLS, RoundTripTLS; six test processes, plaintext and TLS
# alternating) through benchstat (`go install
# golang.org/x/perf/cmd/benchstat@latest`; without it the raw lines go in).
# About 5 minutes; `go run ./bench/security -quick` checks it works in
# seconds without touching the file.
BENCHSTAT ?= benchstat
bench-security: build
	@set -e; d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
	$(GO) test -c -o $$d/network.test ./broker/network/; \
	for i in 1 2 3 4 5 6; do $$d/network.test -test.run '^$$' -test.bench 'FetchTLS|RoundTripTLS' -test.benchmem; done > $$d/micro.txt; \
	$(BENCHSTAT) -col /transport $$d/micro.txt > $$d/micro-stat.txt 2>/dev/null || cp $$d/micro.txt $$d/micro-stat.txt; \
	$(GO) run ./bench/security -qk $(BIN) -microbench $$d/micro-stat.txt $(BENCHFLAGS) -o bench/SECURITY.md

# Rewrite golden files after an intended output change; review the diff.
golden:
	$(GO) test ./inspect/ ./cmd/qk/ ./tui/ -update

# Regenerate the reference pages from the code: docs/config.md (the config
# registry), docs/metrics.md (the broker's metrics) and docs/cli/ (one page
# per command). `make test-unit` fails when the committed pages are stale.
docs:
	$(GO) run ./cmd/qk gendocs docs

completions: build
	./$(BIN) completion bash > completions/qk.bash
	./$(BIN) completion zsh > completions/_qk
	./$(BIN) completion fish > completions/qk.fish
	./$(BIN) completion powershell > completions/qk.ps1

clean:
	rm -rf bin
