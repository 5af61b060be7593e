package prometheus

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
	"github.com/aftermath-forensics/aftermath/sources/metrics/promstore"
)

// exportTo runs Export into a buffer and loads the result into a new Store.
func exportTo(t *testing.T, q metrics.Querier, sels []string, from, to time.Time, step time.Duration) ([]bundle.Query, *promstore.Store, []byte, error) {
	t.Helper()
	var buf bytes.Buffer
	w := metrics.NewWriter(&buf)
	recs, err := Export(context.Background(), q, sels, from, to, step, w)
	if cerr := w.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	return recs, offlineStore(t, "export.om", buf.Bytes()), buf.Bytes(), err
}

// rawSamples returns every stored sample of sel in [from, to].
func rawSamples(t *testing.T, q metrics.Querier, sel string, from, to time.Time) []metrics.Series {
	t.Helper()
	s, err := q.Query(context.Background(), fmt.Sprintf("%s[%dms]", sel, to.Sub(from).Milliseconds()+1), to)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkExport checks an export of DefaultSelectors over the whole incident
// from q against the offline store: raw samples must come back unchanged,
// resampled ones must equal query_range of the selector.
func checkExport(t *testing.T, q metrics.Querier, offline *promstore.Store) {
	from, to := incidentStart, incidentStart.Add(incidentSpan)
	wantSeries := map[string]int{
		DefaultSelectors[0]: 24, // 12 phpfpm_* names x 2 instances
		DefaultSelectors[1]: 0,  // no process-exporter in the data
		DefaultSelectors[2]: 2,
		DefaultSelectors[3]: 2,
		DefaultSelectors[4]: 6,
		DefaultSelectors[5]: 0, // no node memory in the data
		DefaultSelectors[6]: 0,
		DefaultSelectors[7]: 0, // not in the data
		DefaultSelectors[8]: 1,
	}

	t.Run("raw", func(t *testing.T) {
		recs, got, text, err := exportTo(t, q, DefaultSelectors, from, to, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range recs {
			if r.Source != "prometheus" || r.Query != DefaultSelectors[i] || !r.Complete || r.Series != wantSeries[r.Query] ||
				!r.From.Equal(from) || !r.To.Equal(to) || !strings.Contains(r.Note, "raw samples") {
				t.Errorf("record %d = %+v, want %d series, complete", i, r, wantSeries[r.Query])
			}
		}
		for _, sel := range DefaultSelectors {
			want := rawSamples(t, offline, sel, from, to)
			if len(want) != wantSeries[sel] {
				t.Fatalf("the incident has %d series for %s, want %d", len(want), sel, wantSeries[sel])
			}
			sameSeries(t, "raw "+sel, rawSamples(t, got, sel, from, to), want, nil)
		}
		if bytes.Contains(text, []byte("go_goroutines")) {
			t.Error("exported a series no selector matches")
		}
	})

	t.Run("resampled", func(t *testing.T) {
		const step = 30 * time.Second
		sels := []string{`{__name__=~"phpfpm_.*"}`, `phpfpm_listen_queue`, `node_cpu_seconds_total{mode="idle"}`}
		recs, got, _, err := exportTo(t, q, sels, from, to, step)
		if err != nil {
			t.Fatal(err)
		}
		if r := recs[1]; r.Series != 0 || !strings.Contains(r.Note, "already written by an earlier selector") {
			t.Errorf("overlapping selector: %+v", r)
		}
		if r := recs[0]; !strings.Contains(r.Note, "resampled by query_range every 30s") || !r.Complete {
			t.Errorf("record = %+v", r)
		}
		for _, sel := range sels {
			want, err := offline.QueryRange(context.Background(), sel, from, to, step)
			if err != nil {
				t.Fatal(err)
			}
			sameSeries(t, "resampled "+sel, rawSamples(t, got, sel, from, to), want, nil)
		}
	})
}

// TestExportOffline exports from metrics.Store: Export needs only a
// metrics.Querier, and the offline engine is the reference.
func TestExportOffline(t *testing.T) {
	offline := offlineStore(t, "incident.om", incident(t))
	checkExport(t, offline, offline)
}

func TestExportRecordsFailures(t *testing.T) {
	offline := offlineStore(t, "incident.om", incident(t))
	from, to := incidentStart, incidentStart.Add(time.Hour)
	sels := []string{"rate(phpfpm_listen_queue[1m])", "phpfpm_listen_queue offset 5m", "phpfpm_total_processes"}
	recs, _, _, err := exportTo(t, offline, sels, from, to, 0)
	if err == nil || !strings.Contains(err.Error(), "not a series selector") {
		t.Fatalf("err = %v, want the bad selectors named", err)
	}
	for i, r := range recs {
		if want := i == 2; r.Complete != want {
			t.Errorf("record %d complete = %t, want %t (%s)", i, r.Complete, want, r.Note)
		}
	}
	if recs[2].Series != 2 {
		t.Errorf("the good selector exported %d series, want 2", recs[2].Series)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	recs, err = Export(ctx, offline, sels[2:], from, to, 0, metrics.NewWriter(&bytes.Buffer{}))
	if err == nil || len(recs) != 1 || recs[0].Complete || !strings.Contains(recs[0].Note, "not fetched") {
		t.Errorf("cancelled: %v %+v", err, recs)
	}
	if _, err := Export(context.Background(), offline, sels, to, from, 0, metrics.NewWriter(&bytes.Buffer{})); err == nil {
		t.Error("no error for an inverted window")
	}
}
