# aftermath: the two commands a newcomer needs are `make run` and `make test`.
GO      ?= go
BIN     := bin/aftermath
OUT     ?= aftermath-demo
PKGS    := ./...

# The build stamps what it was built from with -ldflags, so `aftermath version`
# and report.json name the commit even where GOFLAGS carries -buildvcs=false
# (the Go toolchain then records no VCS revision). A -ldflags on the command
# line wins over one in GOFLAGS. Override any of them: make build VERSION=v1.2.0
VERSION    ?= $(shell git describe --always --dirty 2>/dev/null)
COMMIT     ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS    := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.buildDate=$(BUILD_DATE)

.PHONY: all build run test bench bench-go fmt clean accuracy loki-cost

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/aftermath

# Simulate the sample incident (crawler-backlog, seed 1: the same every time)
# and write its postmortem.
run: build
	./$(BIN) demo --out $(OUT)

# No package should take over a minute on a quiet 2-core machine (issue 26).
# -timeout bounds each package's test binary far above that, so that a busy
# machine stays clear of it while a hung test still ends: at load 28 on 2
# cores sources/live took 601 s and failed at go test's default 10 minutes.
# cmd/testsummary prints failures in full, one line per package, and ends with
# the count of skipped tests and why; it exits with go test's status.
TEST_TIMEOUT ?= 20m

# go test starts the packages' test binaries in the order it is given them,
# two at a time; ./... gives them in alphabetical order, which left the
# long sources/live and sources/simulate for the end, alone on one core.
# The longest go first; ./... adds the rest (go test drops the repeats).
# rules/replay runs beside cmd/aftermath: its 25 s are mostly a replay
# waiting in real time (about 5 s of CPU), so cmd/aftermath has nearly both
# cores meanwhile. Beside analysis it took 41-59 s, beside rules/replay
# 24-25 s; the whole of make test took 147 and 160 s, against 148-172 s in
# the old order.
TEST_PKGS ?= ./cmd/aftermath ./rules/replay ./analysis ./detect ./sources/live ./rules ./sources/simulate ./report ./detect/configchange $(PKGS)

# `go test` links a test binary it runs and throws away without the symbol
# table and DWARF (-s -w) on its own; `go test -c` keeps them. The fuzz step
# below builds with -c and passes the same flags, so that it links as cheaply
# (the rules test binary, which links Caddy: 7.7 s of CPU instead of 11.2).
# A failing test's stack trace still names every function, file and line
# (the runtime reads them from pclntab, which -s keeps).
TEST_LDFLAGS ?= -s -w

# The tests are built without cgo: nothing in aftermath or its dependencies
# needs it, and linking the 40 test binaries took ~60 s of CPU instead of ~76
# (warm cache; the rules test binary, which links Caddy: 18.3 s against
# 20.6). Every step of the target (vet, testsummary, the tests, the fuzz)
# uses the same setting, so that a clean checkout (.ci/run) compiles each
# package once: the standard library cold cost 121 s of CPU without cgo, 123
# with it. A cache filled with cgo (make build, a plain go test) is rebuilt
# once for the tests. make test CGO_ENABLED=1 builds them as before.
test: export CGO_ENABLED = 0
test:
	$(GO) vet $(PKGS)
	$(GO) run ./cmd/testsummary -- $(GO) test -json -count=1 -timeout $(TEST_TIMEOUT) $(TEST_PKGS)
	# A short, bounded fuzz of the rule generator: hostile log values must never
	# add a directive, handler or site (its corpus is in rules/testdata/fuzz).
	# A count, not a duration: Go 1.26's fuzz coordinator can report its own
	# -fuzztime deadline as "context deadline exceeded" when a worker is
	# mid-input at that instant (golang/go#75804, fixed in 1.27), which failed
	# CI on a busy host with no failing input written.
	# It starts from the seeds and rules/testdata/fuzz alone, as on a fresh CI
	# machine, with an empty fuzz cache of its own: `go test -fuzz` would also
	# rerun every input any earlier run found interesting, kept in GOCACHE,
	# and that grows with every run (5 to 9 inputs each): at 290 inputs the
	# step took 62 s of CPU against 29 s from the 26 seeds, for the same 3000
	# executions. A failing input is still written to rules/testdata/fuzz.
	fuzz=$$(mktemp -d) && trap 'rm -rf "$$fuzz"' EXIT && \
	$(GO) test -c -fuzz FuzzGenerate -ldflags='$(TEST_LDFLAGS)' -o "$$fuzz/rules.test" ./rules/ && \
	cd rules && "$$fuzz/rules.test" -test.run '^$$' -test.fuzz FuzzGenerate -test.fuzztime 3000x \
		-test.timeout $(TEST_TIMEOUT) -test.fuzzcachedir "$$fuzz/cache"

# Ingest benchmark (issue 9): aftermath's ingest against the bare reference loop,
# zcat and GoAccess on a generated 1 GiB Caddy log (and 4 GiB for the flat-memory
# check), cached in /tmp/aftermath-bench; prints medians, ratios and verdicts.
# Its programs, cmd/ingestbench, cmd/analyzebench and cmd/bareloop, are built
# here only: `make build` ships cmd/aftermath alone.
bench:
	.ci/bench.sh

# go test's micro-benchmarks (reader, aggregation, reference loop; MB/s via b.SetBytes).
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# What a full pull and a pushdown cost a (fake) Loki on the simulated day and
# week (issue 29): raw bytes pulled, bytes on the wire, bytes Loki scanned by
# its own statistics, requests, wall time and each one's story, as a table.
# About 150 s of CPU for the day; LOKI_COST=day,week,day-limits,day-bytes picks the runs.
LOKI_COST ?= day,week
loki-cost:
	AFTERMATH_LOKI_COST=$(LOKI_COST) $(GO) test -count=1 -timeout 60m -run '^TestLokiCost$$' -v ./analysis/

# Diagnosis accuracy (issue 13): every simulate scenario over 5 seeds, each
# analyzed as `aftermath analyze` does and scored against its truth.json; prints
# one table and a summary line per scenario, then the independent incidents'
# scores (shared/data/independent, score_findings.py's checks) beside them.
# A measurement, not part of `test`. Seeds 1-5 have been tuned against; measure
# unseen ones with `make accuracy ACCURACY_ARGS='-accuracy.first-seed 6'`.
ACCURACY_ARGS ?=
accuracy:
	$(GO) test -tags accuracy -run '^TestAccuracy$$' -count=1 -timeout 60m -v ./cmd/aftermath/ $(ACCURACY_ARGS)

fmt:
	gofmt -w .

clean:
	rm -rf bin $(OUT)
