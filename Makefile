# aftermath: the two commands a newcomer needs are `make run` and `make test`.
GO      ?= go
BIN     := bin/aftermath
OUT     ?= aftermath-demo
PKGS    := ./...

.PHONY: all build run test bench bench-go fmt clean accuracy

all: build

build:
	$(GO) build -o $(BIN) ./cmd/aftermath

# Simulate the sample incident (crawler-backlog, seed 1: the same every time)
# and write its postmortem.
run: build
	./$(BIN) demo --out $(OUT)

test:
	$(GO) vet $(PKGS)
	$(GO) test -count=1 $(PKGS)
	# A short, bounded fuzz of the rule generator: hostile log values must never
	# add a directive, handler or site (its corpus is in rules/testdata/fuzz).
	$(GO) test -run '^$$' -fuzz FuzzGenerate -fuzztime 10s ./rules/

# Ingest benchmark (issue 9): aftermath's ingest against the bare reference loop,
# zcat and GoAccess on a generated 1 GiB Caddy log (and 4 GiB for the flat-memory
# check), cached in /tmp/aftermath-bench; prints medians, ratios and verdicts.
# Its programs, cmd/ingestbench and cmd/analyzebench, are built here only: `make
# build` ships cmd/aftermath alone.
bench:
	.ci/bench.sh

# go test's micro-benchmarks (reader, aggregation, reference loop; MB/s via b.SetBytes).
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Diagnosis accuracy (issue 13): every simulate scenario over 5 seeds, each
# analyzed as `aftermath analyze` does and scored against its truth.json; prints
# one table and a summary line per scenario, then the independent incidents'
# scores (shared/data/independent, score_findings.py's checks) beside them.
# A measurement, not part of `test`.
accuracy:
	$(GO) test -tags accuracy -run '^TestAccuracy$$' -count=1 -timeout 60m -v ./cmd/aftermath/

fmt:
	gofmt -w .

clean:
	rm -rf bin $(OUT)
