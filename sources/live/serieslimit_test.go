package live

import (
	"context"
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

// Under Loki's max_query_series (8), refused in Loki's words, the
// simulated incident's pushdown sums by client family and by status are split by the values of their
// grouping (the families are there all day, so no split in time
// narrows them): the per-minute counts, the status counts, the families
// pulled and the lines are the unlimited fetch's, nothing is incomplete,
// and the split is among the limits learned. Before, the family counts
// failed and pushdown pulled the minutes alone.
func TestFetchUnderSeriesLimitEqualsUnlimited(t *testing.T) {
	t.Parallel()
	// The unlimited fetch reads the shared fake; the limited one its own,
	// the same access log under the limit: the two run side by side. Half
	// an hour of baseline, not the default 3 h: the families are there all
	// day, and each value a split counts is a pass of Loki over the range.
	freeCfg, b, shared := sharedIncident(t)
	baseline := 30 * time.Minute
	freeCfg.Baseline = D(baseline)
	from, to := b.Manifest.Window.From, b.Manifest.Window.To
	lk := lokitest.New(t)
	shared.Each(`{job="caddy"}`, from.Add(-baseline), to, func(_ string, e lokitest.Entry) {
		lk.Push(accessStream, time.Unix(0, e.TS), e.Line)
	})
	lk.SetMaxQuerySeries(8)
	cfg := *freeCfg
	l := *cfg.Loki
	l.Addr, cfg.Loki = lk.URL(), &l
	// The bundles are the parent's: a subtest's TempDir goes when it ends.
	freeDir, dir := filepath.Join(t.TempDir(), "free"), filepath.Join(t.TempDir(), "limited")
	fetch := func(t *testing.T, cfg *Config, dir string) *bundle.Manifest {
		c := *cfg
		l := *c.Loki
		l.Logs, c.Loki, c.Changes = nil, &l, Changes{}
		pushDownAlways(&c)
		m, notes, err := Fetch(context.Background(), &c, from, to, dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p := sources.Problems(notes); len(p) > 0 {
			t.Errorf("notes: %v", p)
		}
		for _, q := range m.Queries {
			if q.Source == loki.Source && !q.Complete {
				t.Errorf("%s incomplete: %s", q.File, q.Note)
			}
		}
		return m
	}
	var free, m *bundle.Manifest
	t.Run("fetch", func(t *testing.T) {
		t.Run("unlimited", func(t *testing.T) {
			t.Parallel()
			free = fetch(t, freeCfg, freeDir)
			if free.Pushdown == nil || len(free.Pushdown.Families) == 0 {
				t.Fatalf("the unlimited pushdown pulled no client family: the test would not see the family counts fail")
			}
		})
		t.Run("limited", func(t *testing.T) {
			t.Parallel()
			m = fetch(t, &cfg, dir)
			if calls, _ := lk.Stats(); calls["error"] == 0 {
				t.Fatalf("Loki refused nothing: the limit does not bite")
			}
		})
	})
	if t.Failed() {
		return
	}
	for _, f := range []string{AccessFile, MinuteCountsFile, FamiliesFile, bundle.MinuteStatusFile} {
		want, got := sortedLines(t, filepath.Join(freeDir, f)), sortedLines(t, filepath.Join(dir, f))
		if !slices.Equal(want, got) {
			t.Errorf("%s: %d lines under the limit, %d without, or they differ", f, len(got), len(want))
		}
	}
	if m.Pushdown == nil || !slices.Equal(m.Pushdown.Families, free.Pushdown.Families) {
		t.Errorf("families pulled under the limit %v, without %v", m.Pushdown, free.Pushdown.Families)
	}
	learned := strings.Join(m.LokiLimitsLearned, "\n")
	if !strings.Contains(learned, "split by the values of label "+familyLabel) || !strings.Contains(learned, "maximum number of series (8) reached for a single query") {
		t.Errorf("limits learned %q", learned)
	}
}
