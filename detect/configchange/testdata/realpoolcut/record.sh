#!/bin/bash
# Remakes bundle/ (and its truth.json): a real Caddy + php-fpm + Prometheus run in which a
# commit three hours earlier trimmed pm.max_children from 8 to 3 and an
# ordinary crowd then fills the pool. Needs (Debian 12): php8.2-fpm,
# prometheus, prometheus-node-exporter, prometheus-process-exporter, python3,
# git, and from the module root (the module graph's own Caddy):
#   go build -o /tmp/caddy github.com/caddyserver/caddy/v2/cmd/caddy
#   go build -o /tmp/loadgen ./detect/configchange/testdata/realpoolcut/loadgen
#   go build -o /tmp/aftermath ./cmd/aftermath
# Run as root (php-fpm's master; workers run as www-data). About 9 minutes of
# wall; php-fpm and Caddy run at normal priority (the pool's CPU must not be
# yielded to the machine's niced work), everything else niced.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
RUN=${RUN:-/tmp/realpoolcut}
CADDY=${CADDY:-/tmp/caddy} LOADGEN=${LOADGEN:-/tmp/loadgen} AFTERMATH=${AFTERMATH:-/tmp/aftermath}
OLD=8 NEW=3 CPU_MS=5 MEM_MB=8 WAIT_MS=250
PHASES=${PHASES:-90:2:2,20:2:9,300:9:9,40:2:2}
# OUT is where the bundle goes: bundle/ beside this script, or another
# recording of the same stack (shortburst: OUT=.../shortburst PHASES=...).
OUT=${OUT:-$HERE/bundle}
rm -rf "$RUN" && mkdir -p "$RUN"/{logs,docroot,config,prom,bundle/{access,logs,metrics,changes}}
chmod 755 "$RUN" "$RUN/docroot"; chmod 777 "$RUN/logs"
cp "$HERE/app.php" "$HERE/healthz.php" "$RUN/docroot/"
render() { sed -e "s|@RUN@|$RUN|g" -e "s|@MAX_CHILDREN@|$1|" -e "s|@CPU_MS@|$CPU_MS|" -e "s|@MEM_MB@|$MEM_MB|" -e "s|@WAIT_MS@|$WAIT_MS|" "$2"; }

# The configuration's git repository: the pool as first set up, then the cut.
now=$(date +%s)
cd "$RUN/config" && git init -q -b main .
git config user.name "Site Ops" && git config user.email ops@site.test
render $OLD "$HERE/www.conf.in" > www.conf && render $OLD "$HERE/Caddyfile.in" > Caddyfile
git add . && GIT_AUTHOR_DATE="@$((now - 10*86400)) +0000" GIT_COMMITTER_DATE="@$((now - 10*86400)) +0000" \
	git commit -q -m "Add php-fpm pool and Caddy site" -m "pm static, 8 workers; Caddy checks /healthz.php every 1s."
render $NEW "$HERE/www.conf.in" > www.conf
git add . && GIT_AUTHOR_DATE="@$((now - 3*3600)) +0000" GIT_COMMITTER_DATE="@$((now - 3*3600)) +0000" \
	git commit -q -m "php-fpm: trim the pool to 3 workers" -m "Traffic is light; free memory for the cache."
cat > "$RUN/php-fpm.conf" <<CONF
[global]
pid = $RUN/php-fpm.pid
error_log = $RUN/logs/php-fpm.log
daemonize = no
include = $RUN/config/www.conf
CONF
sed "s|@RUN@|$RUN|g" "$HERE/prometheus.yml.in" > "$RUN/prometheus.yml"

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
php-fpm8.2 -F -y "$RUN/php-fpm.conf" & pids+=($!)
"$CADDY" run --config "$RUN/config/Caddyfile" --adapter caddyfile > "$RUN/logs/caddy.stdout" 2>&1 & pids+=($!)
nice -n 10 prometheus-process-exporter -procnames php-fpm8.2 -threads=false -gather-smaps=true \
	-web.listen-address 127.0.0.1:19256 > "$RUN/logs/process-exporter.log" 2>&1 & pids+=($!)
nice -n 10 prometheus-node-exporter --web.listen-address=127.0.0.1:19100 --collector.disable-defaults \
	--collector.cpu --collector.meminfo --collector.netstat > "$RUN/logs/node-exporter.log" 2>&1 & pids+=($!)
nice -n 10 prometheus --config.file="$RUN/prometheus.yml" --storage.tsdb.path="$RUN/prom" \
	--web.listen-address=127.0.0.1:19090 > "$RUN/logs/prometheus.log" 2>&1 & pids+=($!)
sleep 20
nice -n 10 python3 "$HERE/sample_proc.py" php-fpm8.2 "$RUN/proc-samples.jsonl" \
	"http://127.0.0.1:18180/fpm-status?json&full" & pids+=($!)
from=$(date -u +%Y-%m-%dT%H:%M:%SZ)
sleep 10
nice -n 10 "$LOADGEN" -phases "$PHASES" -out "$RUN/requests.csv"
sleep 20
to=$(date -u +%Y-%m-%dT%H:%M:%SZ)

# php-fpm's CPU and memory and the pool's series, exported by aftermath's own
# fetch (Prometheus only), as a bundle holds them.
cat > "$RUN/aftermath.yaml" <<CONF
prometheus:
  url: http://127.0.0.1:19090
CONF
nice -n 10 "$AFTERMATH" fetch --config "$RUN/aftermath.yaml" --from "$from" --to "$to" --out "$RUN/fetched" --quiet || true
cleanup; trap - EXIT

B=$RUN/bundle
cp "$RUN"/fetched/metrics/* "$B/metrics/"
gzip -c "$RUN/logs/access.log" > "$B/access/access.log.gz"
gzip -c "$RUN/logs/caddy.log" > "$B/logs/caddy.log.gz"
cp "$RUN/logs/php-fpm.log" "$B/logs/php-fpm.log"
tar -C "$RUN" -czf "$B/changes/config.tar.gz" config
cat > "$B/bundle.yaml" <<CONF
# Recorded on a real Caddy $(awk '$1=="github.com/caddyserver/caddy/v2"{print $2}' "$HERE/../../../../go.mod") + $(php-fpm8.2 -v | head -1 | cut -d' ' -f1-2) (fpm) + Prometheus $(prometheus --version 2>&1 | head -1 | cut -d' ' -f3) stack (record.sh).
window:
  from: $from
  to: $to
timezone: UTC
site:
  health_uri: "/healthz.php"
  health_interval_s: 1.0
  health_timeout_s: 10.0
  health_fails: 3
  client_timeout_s: 10.0
CONF
python3 "$HERE/truth.py" "$RUN" $OLD $NEW $CPU_MS $MEM_MB $WAIT_MS > "$B/truth.json"
rm -rf "$OUT" && cp -r "$B" "$OUT" && chmod -R a+rX,go-w "$OUT"
du -sh "$OUT"
