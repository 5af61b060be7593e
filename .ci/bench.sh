#!/usr/bin/env bash
# make bench. Two tables, each over a generated realistic Caddy log:
#
# 1. The whole analysis (issue 26): all of analyze (cmd/analyzebench: ingest,
#    detectors, report, rules backtest, rendering) beside the bare reference
#    loop (jsonparser, cmd/bareloop: a small program of its own, so that it
#    does not pay aftermath's start-up) over the same log, at 1 and 2 cores,
#    alternating; prints MB per CPU-second of each (the speed of one core),
#    their ratio and peak RSS, and the budget's verdicts (ratio >= 0.5 and
#    < 80 MiB at 1 core), and the flat-memory check of the analysis: the same
#    log's traffic written at 16 times the lines (BENCH_BIG_SIZE), the same
#    distinct keys.
# 2. Ingest (issue 9): aftermath's ingest (accesslog.Read +
#    detect.Traffic.Observe and the spill of the requests for the rules, what
#    analyze's ingest.Load does) against the bare reference loop (jsonparser,
#    and fastjson), zcat, cat and GoAccess (its CADDY format, and the same
#    without the tls fields), alternating and repeated on one generated 1 GiB
#    Caddy log; all of analyze on it; and the peak RSS of ingest on 1 GiB and
#    4 GiB of the same traffic (the 1 GiB log's lines, each written 4 times).
# Measured one process at a time: wall and CPU time (user+sys) of each, peak RSS
# from the kernel (VmHWM, or GNU time for other programs).
#
# The logs are generated once and cached in $BENCH_DIR (named after the
# generator's source, so a changed generator writes new ones). Environment:
#   BENCH_DIR            where the logs live (default /tmp/aftermath-bench)
#   BENCH_ANALYSIS_SIZE  size of the whole analysis's log, 0 to skip table 1 (default 256MB)
#   BENCH_ANALYSIS_REPS  runs of each in table 1 (default 3)
#   BENCH_SIZE           size of the ingest table's log, 0 to skip table 2 (default 1GiB)
#   BENCH_BIG_SIZE       size of the flat-memory logs, 0 to skip (default 4GiB)
#   BENCH_REPS           runs of each reader in table 2 (default 5)
#   BENCH_GOACCESS_REPS  runs of each GoAccess mode (default 1: ~100 s each in CADDY mode)
# The quickest useful run: BENCH_SIZE=0 BENCH_BIG_SIZE=0 make bench (table 1 alone).
# GoAccess rows are skipped, with a message, where goaccess is not installed
# (Debian: apt-get install goaccess).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${BENCH_DIR:-/tmp/aftermath-bench}
asize=${BENCH_ANALYSIS_SIZE:-256MB}
areps=${BENCH_ANALYSIS_REPS:-3}
size=${BENCH_SIZE:-1GiB}
big=${BENCH_BIG_SIZE:-4GiB}
reps=${BENCH_REPS:-5}
gareps=${BENCH_GOACCESS_REPS:-1}
mkdir -p "$dir"

bin="$dir/ingestbench"
go build -o "$bin" ./cmd/ingestbench
go build -o "$dir/analyzebench" ./cmd/analyzebench
go build -o "$dir/bareloop" ./cmd/bareloop

# The generator draws its readers and writes its JSON with sources/simulate's
# pieces, so their files name the log too.
stamp=$(cat cmd/ingestbench/benchlog/gen.go sources/simulate/clients.go sources/simulate/output.go | sha256sum | cut -c1-10)

# generate SIZE [GZIP]: the log of that size (and its gzip copy), once.
generate() {
  local log="$dir/caddy-$1-$stamp.log"
  if [ ! -s "$log" ] || { [ -n "${2:-}" ] && [ ! -s "$log.gz" ]; }; then
    echo "generating $log ${2:+(and $log.gz)} ..." >&2
    "$bin" gen -size "$1" -out "$log" ${2:+-gzip "$log.gz"} >&2
  fi
  echo "$log"
}

# flatlog SIZE: the flat-memory log of the SIZE log, once: its traffic, each
# line written as many times as fit in $big, so that it has exactly the SIZE
# log's distinct keys (addresses, pages, fingerprints, minutes) at 4 or 16
# times the lines. A denser log of $big drawn afresh holds more keys (more of
# the population in each minute), and would measure them instead of the lines.
flatlog() {
  local log="$dir/caddy-$1-repeated-to-$big-$stamp.log"
  if [ ! -s "$log" ]; then
    echo "generating $log ..." >&2
    "$bin" gen -size "$1" -repeat-to "$big" -out "$log" >&2
  fi
  echo "$log"
}

echo "machine: $(nproc) CPUs, $(uptime)" >&2

if [ "$asize" != "0" ]; then
  alog=$(generate "$asize")
  abig=""
  [ "$big" != "0" ] && abig=$(flatlog "$asize")
  cat "$alog" > /dev/null # the page cache, so that the first run does not pay the disk
  "$bin" analysis -plain "$alog" -reps "$areps" ${abig:+-big "$abig"}
fi

if [ "$size" != "0" ]; then
  log=$(generate "$size" gzip)
  args=(-plain "$log" -gzip "$log.gz" -reps "$reps" -goaccess-reps "$gareps")
  [ "$big" != "0" ] && args+=(-big "$(flatlog "$size")")
  cat "$log" "$log.gz" > /dev/null
  "$bin" table "${args[@]}"
fi
echo "after: $(uptime)"
