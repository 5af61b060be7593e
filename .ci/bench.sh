#!/usr/bin/env bash
# Ingest benchmark of issue 9 (make bench): aftermath's ingest (accesslog.Read +
# detect.Traffic.Observe and the spill of the requests for the rules, what analyze's ingest.Load does) against the bare reference loop
# (jsonparser, and fastjson), zcat, cat and GoAccess (its CADDY format, and the
# same without the tls fields), alternating and repeated on one generated 1 GiB
# Caddy log; all of analyze on it (ingest, then detectors, report, rules
# backtest, rendering); and the peak RSS of ingest on 1 GiB and 4 GiB of the
# same traffic. Prints a table of medians and the targets' verdicts.
# Measured one process at a time: wall and CPU time (user+sys) of each, peak RSS
# from the kernel (VmHWM, or GNU time for other programs).
#
# The logs are generated once and cached in $BENCH_DIR (named after the
# generator's source, so a changed generator writes new ones). Environment:
#   BENCH_DIR            where the logs live (default /tmp/aftermath-bench)
#   BENCH_SIZE           size of the main log (default 1GiB)
#   BENCH_BIG_SIZE       size of the flat-memory log, 0 to skip (default 4GiB)
#   BENCH_REPS           runs of each reader (default 5)
#   BENCH_GOACCESS_REPS  runs of each GoAccess mode (default 1: ~100 s each in CADDY mode)
# GoAccess rows are skipped, with a message, where goaccess is not installed
# (Debian: apt-get install goaccess).
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${BENCH_DIR:-/tmp/aftermath-bench}
size=${BENCH_SIZE:-1GiB}
big=${BENCH_BIG_SIZE:-4GiB}
reps=${BENCH_REPS:-5}
gareps=${BENCH_GOACCESS_REPS:-1}
mkdir -p "$dir"

bin="$dir/ingestbench"
go build -o "$bin" ./cmd/ingestbench
go build -o "$dir/analyzebench" ./cmd/analyzebench

# The generator draws its readers and writes its JSON with sources/simulate's
# pieces, so their files name the log too.
stamp=$(cat cmd/ingestbench/benchref/gen.go sources/simulate/clients.go sources/simulate/output.go | sha256sum | cut -c1-10)
log="$dir/caddy-$size-$stamp.log"
if [ ! -s "$log" ] || [ ! -s "$log.gz" ]; then
  echo "generating $log (and $log.gz) ..." >&2
  "$bin" gen -size "$size" -out "$log" -gzip "$log.gz"
fi
args=(-plain "$log" -gzip "$log.gz" -reps "$reps" -goaccess-reps "$gareps")
if [ "$big" != "0" ]; then
  biglog="$dir/caddy-$big-$stamp.log"
  if [ ! -s "$biglog" ]; then
    echo "generating $biglog ..." >&2
    "$bin" gen -size "$big" -out "$biglog"
  fi
  args+=(-big "$biglog")
fi
# Warm the page cache so that the first run does not pay the disk.
cat "$log" "$log.gz" > /dev/null

echo "machine: $(nproc) CPUs, $(uptime)" >&2
"$bin" table "${args[@]}"
echo "after: $(uptime)"
