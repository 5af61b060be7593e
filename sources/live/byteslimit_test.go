package live

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/loki"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// Under Loki's max_query_bytes_read, refused in Loki's words, a fetch
// splits its queries in time and then by label shards until each fits:
// the per-minute counts, the status counts, the families and the pulled
// lines are the unlimited fetch's, in a pushdown and in a full pull, and
// the limits followed are in bundle.yaml, which report.json's data
// quality lists. The access log is shipped as two streams (host wiki-a,
// wiki-b) and the limit lies between one stream's and both streams' bytes
// over two minutes of the burst, so only a split by host gets the burst's
// minutes. Before, pushdown under this limit got nothing.
func TestFetchUnderBytesLimitEqualsUnlimited(t *testing.T) {
	t.Parallel()
	cfg, single, _, from, to := smallIncident(t)
	lk := lokitest.New(t)
	hosts := []map[string]string{{"job": "caddy", "host": "wiki-a"}, {"job": "caddy", "host": "wiki-b"}}
	n := 0
	single.Each(`{job="caddy"}`, from.Add(-2*time.Hour), to, func(_ string, e lokitest.Entry) {
		lk.Push(hosts[n%2], time.Unix(0, e.TS), e.Line)
		n++
	})
	cfg.Loki.Addr = lk.URL()

	// The most one stream, and both, hold in any two minutes and a bit
	// (what one step of a per-minute count reads).
	var oneMax, bothMax int64
	for m := from.Add(-time.Hour); m.Before(to); m = m.Add(time.Minute) {
		_, a := lk.Bytes(`{host="wiki-a"}`, m.Add(-time.Minute-time.Second), m.Add(time.Minute+time.Second))
		_, b := lk.Bytes(`{host="wiki-b"}`, m.Add(-time.Minute-time.Second), m.Add(time.Minute+time.Second))
		oneMax, bothMax = max(oneMax, a, b), max(bothMax, a+b)
	}
	limit := oneMax * 11 / 10
	if limit >= bothMax {
		t.Fatalf("no limit between one stream's %d and both streams' %d bytes", oneMax, bothMax)
	}

	files := []string{AccessFile, MinuteCountsFile, FamiliesFile, bundle.MinuteStatusFile}
	fetch := func(pushdown bool) (*bundle.Manifest, string) {
		c := *cfg
		if pushdown {
			pushDownAlways(&c)
		}
		dir := filepath.Join(t.TempDir(), "bundle")
		m, _, err := Fetch(context.Background(), &c, from, to, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range m.Queries {
			if q.Source == loki.Source && !q.Complete {
				t.Errorf("pushdown %v, limit %d: %s incomplete: %s", pushdown, limit, q.File, q.Note)
			}
		}
		return m, dir
	}
	for _, pushdown := range []bool{true, false} {
		lk.SetMaxQueryBytesRead(0)
		_, free := fetch(pushdown)
		lk.SetMaxQueryBytesRead(limit)
		lk.ResetStats()
		m, limited := fetch(pushdown)
		if calls, _ := lk.Stats(); calls["error"] == 0 {
			t.Errorf("pushdown %v: Loki refused nothing: the limit does not bite", pushdown)
		}
		for _, f := range files {
			want, got := sortedLines(t, filepath.Join(free, f)), sortedLines(t, filepath.Join(limited, f))
			if !slices.Equal(want, got) {
				t.Errorf("pushdown %v: %s: %d lines under the limit, %d without, or they differ", pushdown, f, len(got), len(want))
			}
		}
		// A full pull pages stream by stream and counts a minute at a
		// time: only the pushdown's per-minute counts over two minutes
		// need the split by host.
		split := "for the bytes they read"
		if pushdown {
			split = "split by the values of label host"
		}
		learned := strings.Join(m.LokiLimitsLearned, "\n")
		if !strings.Contains(learned, split) || !strings.Contains(learned, "the query would read too many bytes") {
			t.Errorf("pushdown %v: limits learned %q", pushdown, learned)
		}
		if pushdown && (m.Pushdown == nil || !slices.Equal(m.Pushdown.LimitsLearned, m.LokiLimitsLearned)) {
			t.Errorf("pushdown's limits learned differ from the fetch's")
		}
		if !noteWith(ManifestNotes(*m), loki.Source, sources.SeverityInfo, split) {
			t.Errorf("pushdown %v: the analysis's notes do not list the limits followed", pushdown)
		}
	}
}

// sortedLines is a bundle file's lines (gunzipped), sorted; nil when the
// file does not exist.
func sortedLines(t *testing.T, path string) []string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	text := ""
	if strings.HasSuffix(path, ".gz") {
		text = gunzip(t, path)
	} else {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text = string(b)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	slices.Sort(lines)
	return lines
}
