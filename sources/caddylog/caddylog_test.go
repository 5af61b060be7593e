package caddylog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

func TestReadFile(t *testing.T) {
	log := strings.Join([]string{
		`{"level":"info","ts":1795966434.7949424,"msg":"using config from file","file":"/srv/Caddyfile"}`,
		`{"level":"info","ts":1795966707.79998,"logger":"http.handlers.reverse_proxy.health_checker.active","msg":"HTTP request failed","host":"127.0.0.1:9000","error":"Get \"http://127.0.0.1:9000/healthz.php\": read tcp 127.0.0.1:37728->127.0.0.1:9000: i/o timeout (Client.Timeout exceeded while awaiting headers)"}`,
		`{"level":"error","ts":1795966709.84,"logger":"http.log.error.log0","msg":"no upstreams available","request":{"uri":"/w/A"}}`,
		`not json at all`,
		``,
		`{"level":"info","ts":1795966726.6285176,"logger":"http.handlers.reverse_proxy.health_checker.active","msg":"host is up","host":"127.0.0.1:9000"}`,
	}, "\n")
	p := filepath.Join(t.TempDir(), "caddy.log")
	if err := os.WriteFile(p, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	var skips sources.Skips
	events, found, err := ReadFile(p, &skips)
	if err != nil || !found {
		t.Fatalf("found %v err %v", found, err)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, e.Kind)
	}
	if got := strings.Join(kinds, ","); got != "failed,no_upstream,up" {
		t.Errorf("events %s", got)
	}
	if events[0].Upstream != "127.0.0.1:9000" || !strings.Contains(events[0].Error, "i/o timeout") {
		t.Errorf("first event %+v", events[0])
	}
	if skips.Count("") != 1 {
		t.Errorf("skipped %d lines, want the one that is not JSON", skips.Count(""))
	}
}

func TestReadLabLog(t *testing.T) {
	p := testenv.LabIncident(t, "logs/caddy.log.gz")
	var skips sources.Skips
	events, found, err := ReadFile(p, &skips)
	if err != nil || !found {
		t.Fatalf("found %v err %v", found, err)
	}
	n := map[string]int{}
	for _, e := range events {
		n[e.Kind]++
	}
	// Counted with jq over the recording: 111 failed checks, 6 recoveries, 3,027 "no upstreams available".
	if n[sources.HealthFailed] != 111 || n[sources.HealthUp] != 6 || n[sources.NoUpstream] != 3027 {
		t.Errorf("events by kind %v", n)
	}
}

func TestNotACaddyLog(t *testing.T) {
	p := filepath.Join(t.TempDir(), "php-fpm.log")
	os.WriteFile(p, []byte("[29-Nov-2026 15:33:54] NOTICE: fpm is running, pid 2891\n"), 0o644)
	var skips sources.Skips
	_, found, err := ReadFile(p, &skips)
	if err != nil || found {
		t.Fatalf("found %v err %v: a php-fpm log is not Caddy's", found, err)
	}
}
