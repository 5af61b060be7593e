package live

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/loki"
)

// fetchSmall runs Fetch on smallIncident after mod and returns what it gives.
func fetchSmall(t *testing.T, mod func(cfg *Config, lk lokiFake), window func(from, to time.Time) (time.Time, time.Time)) (*bundle.Manifest, []sources.QualityNote, error) {
	t.Helper()
	cfg, lk, _, from, to := smallIncident(t)
	if mod != nil {
		mod(cfg, lk)
	}
	if window != nil {
		from, to = window(from, to)
	}
	return Fetch(context.Background(), cfg, from, to, filepath.Join(t.TempDir(), "bundle"), nil)
}

type lokiFake = interface {
	SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool)
	SetMaxQueryLength(time.Duration)
	Push(map[string]string, time.Time, string)
}

func noteWith(notes []sources.QualityNote, source string, severity sources.Severity, text string) bool {
	for _, n := range notes {
		if n.Source == source && n.Severity == severity && strings.Contains(n.Message, text) {
			return true
		}
	}
	return false
}

func recordOf(m *bundle.Manifest, file string) *bundle.Query {
	for i := range m.Queries {
		if m.Queries[i].File == file {
			return &m.Queries[i]
		}
	}
	return nil
}

// A selector with a typo matches nothing: an error naming it (exit 1), an
// incomplete record, never an empty access log passed as complete.
func TestFetchSelectorMatchingNothing(t *testing.T) {
	t.Parallel()
	for _, pushdown := range []bool{false, true} {
		m, notes, err := fetchSmall(t, func(cfg *Config, _ lokiFake) {
			cfg.Loki.Selector = `{job="cadddy"}`
			if pushdown {
				pushDownAlways(cfg)
			}
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !noteWith(notes, loki.Source, sources.SeverityError, `no stream matched {job="cadddy"}`) {
			t.Errorf("pushdown %v: no error naming the selector in %v", pushdown, notes)
		}
		if r := recordOf(m, AccessFile); r == nil || r.Complete {
			t.Errorf("pushdown %v: access record %+v", pushdown, r)
		}
	}
	// The right selector on the same data gives no such error, nor does a
	// window before its logs begin (a scan's baseline slot): that window was
	// empty in Loki, which an info note says.
	_, notes, err := fetchSmall(t, nil, nil)
	if err != nil || noteWith(notes, loki.Source, sources.SeverityError, "no stream matched") {
		t.Errorf("the right selector: err %v notes %v", err, notes)
	}
	m, notes, err := fetchSmall(t, func(cfg *Config, _ lokiFake) { cfg.Prometheus = nil }, func(from, to time.Time) (time.Time, time.Time) {
		return from.Add(-12 * time.Hour), from.Add(-10 * time.Hour)
	})
	if err != nil || len(sources.Problems(notes)) > 0 || !noteWith(notes, loki.Source, sources.SeverityInfo, "has lines in the day before or since") {
		t.Errorf("an empty window before the logs: err %v notes %v", err, notes)
	}
	if r := recordOf(m, AccessFile); r == nil || !r.Complete {
		t.Errorf("an empty window before the logs: record %+v", r)
	}
}

// After the per-minute counts fail, the pulls they would have chosen (the
// access log and every configured log) each have a failed record and a note.
func TestFetchCountsFailedRecordsEverySkippedPull(t *testing.T) {
	t.Parallel()
	m, notes, err := fetchSmall(t, func(cfg *Config, lk lokiFake) {
		pushDownAlways(cfg)
		cfg.Loki.Logs = []LokiLog{{Name: "php-fpm", Selector: `{job="php-fpm"}`}}
		lk.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
			if strings.Contains(r.URL.Query().Get("query"), "[1m]") {
				http.Error(w, "rpc error: code = Internal", http.StatusInternalServerError)
				return true
			}
			return false
		})
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{AccessFile, filepath.Join(bundle.LogsDir, "php-fpm.log")} {
		r := recordOf(m, file)
		if r == nil || r.Complete || !r.Failed || !strings.Contains(r.Note, "per-minute counts failed") {
			t.Errorf("%s: record %+v", file, r)
		}
		if !noteWith(notes, loki.Source, sources.SeverityError, file+" not fetched") {
			t.Errorf("%s: no note in %v", file, notes)
		}
	}
}

// When the raw pull fails after a pushdown, nothing says raw lines were
// pulled for some minutes: not the notes, not bundle.yaml.
func TestFetchFailedRawPullDropsPushdownSummary(t *testing.T) {
	t.Parallel()
	m, notes, err := fetchSmall(t, func(cfg *Config, lk lokiFake) {
		pushDownAlways(cfg)
		lk.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
			if r.URL.Path == "/loki/api/v1/query_range" && r.URL.Query().Get("limit") != "" {
				http.Error(w, "too many outstanding requests", http.StatusBadGateway)
				return true
			}
			return false
		})
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range append(notes, ManifestNotes(*m)...) {
		if strings.Contains(n.Message, "raw lines were pulled for") {
			t.Errorf("note about a pull that did not happen: %s", n.Message)
		}
	}
	if r := recordOf(m, AccessFile); r == nil || !r.Failed {
		t.Errorf("access record %+v", r)
	}
	// Without the failure the summary is there (the test can fail).
	_, notes, _ = fetchSmall(t, func(cfg *Config, _ lokiFake) { pushDownAlways(cfg) }, nil)
	if !noteWith(notes, loki.Source, sources.SeverityInfo, "raw lines were pulled for") {
		t.Errorf("no pushdown summary on success: %v", notes)
	}
}

// A selector Loki cannot parse is a configuration error: Fetch returns it
// (the command exits 2), naming the query, and bundle.yaml still records it.
func TestFetchMalformedSelectorIsAnError(t *testing.T) {
	t.Parallel()
	for sel, why := range map[string]string{
		`{job="caddy",}`: "parse error",  // Loki's 400
		`{job="caddy"`:   "unterminated", // refused before sending
	} {
		m, _, err := fetchSmall(t, func(cfg *Config, _ lokiFake) { cfg.Loki.Selector = sel }, nil)
		if err == nil || !strings.Contains(err.Error(), "malformed") || !strings.HasSuffix(err.Error(), "; loki query: "+sel) || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: err = %v, want it named as malformed (%s)", sel, err, why)
			continue
		}
		if r := recordOf(m, AccessFile); r == nil || !r.Failed {
			t.Errorf("%s: access record %+v", sel, r)
		}
	}
}

// A 25 h window against a Loki with max_query_length 12h succeeds: every
// query is split to the limit, which an info note states.
func TestFetch25hUnderMaxQueryLength(t *testing.T) {
	t.Parallel()
	m, notes, err := fetchSmall(t, func(cfg *Config, lk lokiFake) {
		lk.SetMaxQueryLength(12 * time.Hour)
		cfg.Prometheus = nil
		pushDownAlways(cfg) // the lines are in its last 2 h: the cost model would pull it whole
	}, func(from, to time.Time) (time.Time, time.Time) { return to.Add(-25 * time.Hour), to })
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range sources.Problems(notes) {
		if n.Source == loki.Source {
			t.Errorf("loki problem: %s", n.Message)
		}
	}
	// The client families that stood out are pulled across the range in
	// spans planned from their counts, each within the limit too.
	var lines int64
	for _, file := range []string{AccessFile, FamiliesFile} {
		r := recordOf(m, file)
		if r == nil || !r.Complete {
			t.Errorf("%s record %+v", file, r)
			continue
		}
		lines += r.Lines
	}
	if lines == 0 {
		t.Errorf("no access-log line pulled")
	}
	if !noteWith(notes, loki.Source, sources.SeverityInfo, "limit: 12h") {
		t.Errorf("no note of the limit learned: %v", notes)
	}
}

// Every query a pushdown has Loki compute that fails has its record marked
// failed in bundle.yaml and a note, whatever it was for: the measure of a
// full pull's bytes (which loses only the comparison: an info note, the
// evidence complete), the per-family counts and the per-minute status counts
// (which leave the evidence short: a warning, an error).
func TestFetchFailedComputationIsRecordedFailed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in       string
		severity sources.Severity
		note     string
	}{
		{"bytes_over_time(", sources.SeverityInfo, "the bytes of a full pull are unknown"},
		{"sum by (aftermath_family", sources.SeverityWarning, "per-family counts failed"},
		{"unwrap duration", sources.SeverityError, "per-minute status counts failed"},
	} {
		m, notes, err := fetchSmall(t, func(cfg *Config, lk lokiFake) {
			pushDownAlways(cfg)
			lk.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
				q := r.URL.Query().Get("query")
				if tc.in == "bytes_over_time(" && strings.HasSuffix(r.URL.Path, "/index/stats") {
					// The index's bytes per line spare the
					// bytes_over_time pass: without them it runs.
					http.Error(w, "not found", http.StatusNotFound)
					return true
				}
				if strings.Contains(q, tc.in) {
					http.Error(w, "rpc error: code = Internal", http.StatusInternalServerError)
					return true
				}
				return false
			})
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var rec *bundle.Query
		for i, q := range m.Queries {
			if strings.Contains(q.Query, tc.in) && q.Failed {
				rec = &m.Queries[i]
			}
		}
		if rec == nil || rec.Complete || !strings.Contains(rec.Note, "; failed: ") {
			t.Errorf("%s: no failed record in %+v", tc.in, m.Queries)
		}
		if !noteWith(notes, loki.Source, tc.severity, tc.note) {
			t.Errorf("%s: no %s note %q in %v", tc.in, tc.severity, tc.note, notes)
		}
		if got := len(sources.Problems(notes)) > 0; got != (tc.severity != sources.SeverityInfo) {
			t.Errorf("%s: problems %v in %v", tc.in, got, notes)
		}
		if r := recordOf(m, AccessFile); r == nil || !r.Complete {
			t.Errorf("%s: the access log's record %+v", tc.in, r)
		}
	}
}

// pushdown.baseline_sample_blocks and baseline_sample_block set what of the
// baseline is pulled raw: the default 3 blocks of 10 minutes of the hour
// before the window, or 2 blocks of 5; bundle.yaml's pushdown section (and
// so report.json's evidence.pushdown) states the setting used.
func TestFetchBaselineSampleSetting(t *testing.T) {
	t.Parallel()
	sampled := func(blocks *int, block *Duration) (*bundle.Manifest, []int) {
		t.Helper()
		var dir string
		cfg, _, _, from, to := smallIncident(t)
		pushDownAlways(cfg)
		cfg.Pushdown.BaselineSampleBlocks, cfg.Pushdown.BaselineSampleBlock = blocks, block
		dir = filepath.Join(t.TempDir(), "bundle")
		m, notes, err := Fetch(context.Background(), cfg, from, to, dir, nil)
		if err != nil || len(sources.Problems(notes)) > 0 {
			t.Fatalf("fetch: %v %v", err, notes)
		}
		minutes, err := ReadMinuteCounts(filepath.Join(dir, MinuteCountsFile))
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for i, mm := range minutes {
			if mm.Reason == ReasonBaseline {
				got = append(got, i)
			}
		}
		return m, got
	}
	m, got := sampled(nil, nil)
	if want := append(append(seq(10, 20), seq(30, 40)...), seq(50, 60)...); !slices.Equal(got, want) {
		t.Errorf("default: baseline minutes pulled %v, want %v", got, want)
	}
	if pd := m.Pushdown; pd == nil || pd.BaselineSampled != 30 || pd.BaselineSampleBlocks != 3 || pd.BaselineSampleBlockMinutes != 10 {
		t.Errorf("default: pushdown %+v", pd)
	}
	two := 2
	m, got = sampled(&two, D(5*time.Minute))
	if want := append(seq(25, 30), seq(55, 60)...); !slices.Equal(got, want) {
		t.Errorf("2 blocks of 5m: baseline minutes pulled %v, want %v", got, want)
	}
	if pd := m.Pushdown; pd == nil || pd.BaselineSampled != 10 || pd.BaselineSampleBlocks != 2 || pd.BaselineSampleBlockMinutes != 5 {
		t.Errorf("2 blocks of 5m: pushdown %+v", pd)
	}
}
