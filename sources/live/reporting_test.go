package live

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/loki"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// A pipeline Loki cannot parse, under a full pull, stops at Loki's first
// 400: no sub-range asks again, one note names it, and that note and the
// error give Loki's reason first and the LogQL once, after it. Before, each
// sub-range was counted and paged (two 400s each) and noted with the query
// printed twice before the reason.
func TestMalformedPipelineStopsAtTheFirst400(t *testing.T) {
	t.Parallel()
	cfg, lk, _, from, to := smallIncident(t)
	cfg.Loki.Pipeline = `| json | status >= `
	cfg.Loki.Parallel = 1
	_, notes, err := Fetch(context.Background(), cfg, from, to, filepath.Join(t.TempDir(), "bundle"), nil)
	if err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Fatalf("err %v: want the query named malformed", err)
	}
	calls, _ := lk.Stats()
	if calls["error"] != 1 {
		t.Errorf("Loki answered %d errors: the first 400 must stop the pull", calls["error"])
	}
	var lines []string
	for _, n := range notes {
		if n.Source == loki.Source && n.Severity != sources.SeverityInfo {
			lines = append(lines, n.Message)
		}
	}
	if len(lines) != 1 {
		t.Errorf("%d error notes, want 1: %q", len(lines), lines)
	}
	for _, msg := range append(lines, err.Error()) {
		reason := strings.Index(msg, "parse error")
		query := strings.Index(msg, "{job=")
		if reason < 0 || query < reason || strings.Count(msg, "{job=") != 1 {
			t.Errorf("%q: want Loki's reason, then the LogQL once", msg)
		}
	}
}

// The limits a pushdown learned from Loki are in bundle.yaml's pushdown
// section, which report.json's evidence.pushdown is, in Loki's own words,
// with what the access log cost Loki by its own statistics.
func TestPushdownRecordsTheLimitsLearned(t *testing.T) {
	t.Parallel()
	m, _, err := fetchSmall(t, func(cfg *Config, lk lokiFake) {
		pushDownAlways(cfg)
		lk.SetMaxQueryLength(45 * time.Minute)
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Pushdown == nil {
		t.Fatal("no pushdown section")
	}
	// The cost is stated in Loki's own statistics and in both sizes of its
	// answers: gzip on the wire, well under the JSON it unpacks to.
	if pd := m.Pushdown; pd.LokiBytesProcessed <= 0 || pd.ResponseBytes <= 0 || 2*pd.ResponseBytes >= pd.ResponseDecodedBytes {
		t.Errorf("pushdown cost: Loki processed %d bytes, %d response bytes on the wire, %d unpacked", pd.LokiBytesProcessed, pd.ResponseBytes, pd.ResponseDecodedBytes)
	}
	learned := strings.Join(m.Pushdown.LimitsLearned, "\n")
	if !strings.Contains(learned, "at most 45m") || !strings.Contains(learned, "the query time range exceeds the limit") {
		t.Errorf("limits learned %q: want max_query_length's 45m in Loki's words", learned)
	}
}

// report.json's evidence.pushdown is where a user reads the cost model's
// choice: a window pulled whole by the cost model states it there (the
// full_pull section, with both estimates), and a pushdown states its own
// with Loki's statistics and the limits it learned, as report.json holds
// them after analysis, not only in bundle.yaml. The obvious reading is
// wrong here: a full pull has no pushdown section in bundle.yaml, yet the
// report's section must not be empty.
func TestReportStatesTheChoiceAndLokisCost(t *testing.T) {
	t.Parallel()
	fetchAndReport := func(t *testing.T, mod func(*Config, *lokitest.Loki)) map[string]any {
		cfg, lk, _, from, to := smallIncident(t)
		mod(cfg, lk)
		dir := filepath.Join(t.TempDir(), "bundle")
		if _, _, err := Fetch(context.Background(), cfg, from, to, dir, nil); err != nil {
			t.Fatal(err)
		}
		ev, _ := analyze(t, dir).report["evidence"].(map[string]any)
		pd, ok := ev["pushdown"].(map[string]any)
		if !ok {
			t.Fatalf("report.json has no evidence.pushdown: %v", ev)
		}
		return pd
	}
	t.Run("full pull chosen", func(t *testing.T) {
		t.Parallel()
		pd := fetchAndReport(t, func(cfg *Config, _ *lokitest.Loki) { cfg.PushdownAfter = D(0) })
		e, _ := pd["estimate"].(map[string]any)
		full, _ := e["full_bytes"].(float64)
		pushdown, _ := e["pushdown_bytes"].(float64)
		if e["chosen"] != bundle.ChosenFull || full <= 0 || pushdown <= 0 || pd["full_bytes"] != pd["pulled_bytes"] {
			t.Errorf("evidence.pushdown %v: want the full pull chosen with both estimates, pulling the whole range", pd)
		}
		if n, _ := pd["loki_bytes_processed"].(float64); n <= 0 {
			t.Errorf("evidence.pushdown %v: no bytes Loki processed by its statistics", pd)
		}
	})
	t.Run("pushdown", func(t *testing.T) {
		t.Parallel()
		pd := fetchAndReport(t, func(cfg *Config, lk *lokitest.Loki) {
			pushDownAlways(cfg)
			lk.SetMaxQueryLength(45 * time.Minute)
		})
		if e, _ := pd["estimate"].(map[string]any); e["chosen"] != bundle.ChosenPushdown {
			t.Errorf("evidence.pushdown.estimate %v: want the pushdown chosen", e)
		}
		wire, _ := pd["response_bytes"].(float64)
		decoded, _ := pd["response_decoded_bytes"].(float64)
		scanned, _ := pd["loki_bytes_processed"].(float64)
		if scanned <= 0 || wire <= 0 || 2*wire >= decoded {
			t.Errorf("evidence.pushdown: Loki processed %v bytes, %v on the wire, %v unpacked", scanned, wire, decoded)
		}
		learned, _ := pd["limits_learned"].([]any)
		if len(learned) == 0 || !strings.Contains(fmt.Sprint(learned...), "the query time range exceeds the limit") {
			t.Errorf("evidence.pushdown.limits_learned %v: want max_query_length in Loki's words", learned)
		}
	})
}
