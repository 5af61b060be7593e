package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/analysis"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/live"
	"github.com/aftermath-forensics/aftermath/sources/live/livetest"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// runFetch runs the fetch command as main's run does and returns its exit code.
func runFetch(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errw bytes.Buffer
	cmd := newFetchCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errw)
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		// The run's last line, as main prints it.
		fmt.Fprintf(&errw, "aftermath: %v\n", err)
	}
	return exitCode(err), out.String(), errw.String()
}

func exitCode(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	}
	return exitUsage
}

// liveFakes serves two hours of access log from a fake Loki and php-fpm
// gauges from a fake Prometheus, and writes a configuration reading both.
func liveFakes(t *testing.T) (config string, lk *lokitest.Loki, pr *livetest.Prometheus, from, to time.Time) {
	t.Helper()
	from = time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	to = from.Add(time.Hour)
	lk = lokitest.New(t)
	stream := map[string]string{"job": "caddy", "host": "wiki"}
	for m := from.Add(-time.Hour); m.Before(to); m = m.Add(time.Minute) {
		for k := range 20 {
			ts := m.Add(time.Duration(k) * 3 * time.Second)
			lk.Push(stream, ts, livetest.CaddyLine(ts, fmt.Sprintf("198.51.100.%d", k), "Mozilla/5.0 Firefox/131.0", "en-US", "/wiki/Main_Page", 200, 0.05, 12000))
		}
	}
	om := filepath.Join(t.TempDir(), "pool.om")
	fh, _ := os.Create(om)
	w := metrics.NewWriter(fh)
	for ts := from.Add(-time.Hour); ts.Before(to); ts = ts.Add(15 * time.Second) {
		w.Sample("phpfpm_active_processes", map[string]string{"pool": "www"}, ts, 3)
		w.Sample("phpfpm_total_processes", map[string]string{"pool": "www"}, ts, 16)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	pr = livetest.NewPrometheus(t, om)
	config = filepath.Join(t.TempDir(), "aftermath.yaml")
	doc := fmt.Sprintf("timezone: Asia/Seoul\nbaseline: 1h\nsite:\n  workers: 16\nloki:\n  addr: %s\n  selector: '{job=\"caddy\"}'\n  retries: -1\nprometheus:\n  url: %s\n  retries: -1\n  selectors: [phpfpm_active_processes, phpfpm_total_processes]\n",
		lk.URL(), pr.URL())
	if err := os.WriteFile(config, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return config, lk, pr, from, to
}

// withSelector rewrites the Loki selector of the configuration liveFakes wrote.
func withSelector(t *testing.T, config, selector string) {
	t.Helper()
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Replace(string(b), `selector: '{job="caddy"}'`, "selector: '"+selector+"'", 1)
	if doc == string(b) {
		t.Fatal("no selector to replace")
	}
	if err := os.WriteFile(config, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
}

// appendConfig adds lines at the end of the configuration liveFakes wrote.
func appendConfig(t *testing.T, config, lines string) {
	t.Helper()
	f, err := os.OpenFile(config, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(lines); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFetchCommand(t *testing.T) {
	t.Parallel()
	rfc := func(t time.Time) string { return t.Format(time.RFC3339) }
	tests := []struct {
		name  string
		args  func(config, out string, from, to time.Time) []string
		setup func(t *testing.T, lk *lokitest.Loki, pr *livetest.Prometheus)
		want  int
		// inStderr must appear on stderr; a bundle must exist for exit 0 and 1.
		inStderr string
	}{
		{
			name: "complete",
			args: func(c, o string, f, to time.Time) []string {
				return []string{"--config", c, "--from", rfc(f), "--to", rfc(to), "--out", o}
			},
			want:     exitOK,
			inStderr: "cloudwatch: info: not configured",
		},
		{
			name: "quiet",
			args: func(c, o string, f, to time.Time) []string {
				return []string{"--config", c, "--from", rfc(f), "--to", rfc(to), "--out", o, "--quiet"}
			},
			want: exitOK,
		},
		{
			name: "a Prometheus selector fails: incomplete",
			args: func(c, o string, f, to time.Time) []string {
				return []string{"--config", c, "--from", rfc(f), "--to", rfc(to), "--out", o}
			},
			setup: func(t *testing.T, lk *lokitest.Loki, pr *livetest.Prometheus) {
				pr.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
					r.ParseForm()
					if strings.HasPrefix(r.Form.Get("query"), "phpfpm_total_processes") {
						w.WriteHeader(http.StatusServiceUnavailable)
						return true
					}
					return false
				})
			},
			want:     exitIncomplete,
			inStderr: "prometheus: error: phpfpm_total_processes",
		},
		{
			name: "Loki fails: incomplete",
			args: func(c, o string, f, to time.Time) []string {
				return []string{"--config", c, "--from", rfc(f), "--to", rfc(to), "--out", o}
			},
			setup: func(t *testing.T, lk *lokitest.Loki, pr *livetest.Prometheus) {
				lk.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
					http.Error(w, "ingester unavailable", http.StatusServiceUnavailable)
					return true
				})
			},
			want:     exitIncomplete,
			inStderr: "loki: error:",
		},
		{
			name: "a Loki selector matching nothing: incomplete",
			args: func(c, o string, f, to time.Time) []string {
				withSelector(t, c, `{job="cadddy"}`)
				return []string{"--config", c, "--from", rfc(f), "--to", rfc(to), "--out", o}
			},
			want:     exitIncomplete,
			inStderr: `no stream matched {job="cadddy"}`,
		},
		{
			name: "an unknown key in the configuration: a warning, the fetch goes on",
			args: func(c, o string, f, to time.Time) []string {
				appendConfig(t, c, "note: after the outage\npushdown_afer: 3h\n")
				return []string{"--config", c, "--from", rfc(f), "--to", rfc(to), "--out", o}
			},
			want:     exitOK,
			inStderr: `aftermath.yaml:14: unknown key "pushdown_afer", ignored (did you mean "pushdown_after"?)`,
		},
		{
			name: "a Loki selector Loki cannot parse: usage",
			args: func(c, o string, f, to time.Time) []string {
				withSelector(t, c, `{job="caddy",}`)
				return []string{"--config", c, "--from", rfc(f), "--to", rfc(to), "--out", o}
			},
			want: exitUsage,
		},
		{
			name: "--since works against now",
			args: func(c, o string, f, to time.Time) []string {
				return []string{"--config", c, "--since", "30m", "--out", o}
			},
			// The fakes hold nothing near now: a fetch of nothing is no
			// bundle to analyze.
			want:     exitUsage,
			inStderr: "aftermath: fetched nothing: ",
		},
		{
			name: "Loki and Prometheus both down: nothing fetched, exit 2 naming both",
			args: func(c, o string, f, to time.Time) []string {
				return []string{"--config", c, "--from", rfc(f), "--to", rfc(to), "--out", o}
			},
			setup: func(t *testing.T, lk *lokitest.Loki, pr *livetest.Prometheus) {
				lk.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
					http.Error(w, "ingester unavailable", http.StatusServiceUnavailable)
					return true
				})
				pr.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
					w.WriteHeader(http.StatusServiceUnavailable)
					return true
				})
			},
			want:     exitUsage,
			inStderr: "fetched nothing: loki failed",
		},
		{
			name: "no window",
			args: func(c, o string, f, to time.Time) []string { return []string{"--config", c, "--out", o} },
			want: exitUsage,
		},
		{
			name: "--since and --from",
			args: func(c, o string, f, to time.Time) []string {
				return []string{"--config", c, "--since", "1h", "--from", rfc(f), "--out", o}
			},
			want: exitUsage,
		},
		{
			name: "no --out",
			args: func(c, o string, f, to time.Time) []string { return []string{"--config", c, "--since", "1h"} },
			want: exitUsage,
		},
		{
			name: "reversed window",
			args: func(c, o string, f, to time.Time) []string {
				return []string{"--config", c, "--from", rfc(to), "--to", rfc(f), "--out", o}
			},
			want: exitUsage,
		},
		{
			name: "configuration with an inline password",
			args: func(c, o string, f, to time.Time) []string {
				bad := filepath.Join(filepath.Dir(c), "bad.yaml")
				os.WriteFile(bad, []byte("loki:\n  addr: http://l\n  selector: '{job=\"x\"}'\n  password: x\n"), 0o600)
				return []string{"--config", bad, "--since", "1h", "--out", o}
			},
			want: exitUsage,
		},
		{
			name: "non-empty output directory",
			args: func(c, o string, f, to time.Time) []string {
				os.MkdirAll(o, 0o755)
				os.WriteFile(filepath.Join(o, "x"), nil, 0o644)
				return []string{"--config", c, "--since", "1h", "--out", o}
			},
			want: exitUsage,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config, lk, pr, from, to := liveFakes(t)
			if tt.setup != nil {
				tt.setup(t, lk, pr)
			}
			out := filepath.Join(t.TempDir(), "bundle")
			code, stdout, stderr := runFetch(t, tt.args(config, out, from, to)...)
			if code != tt.want {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.want, stdout, stderr)
			}
			if tt.inStderr != "" && !strings.Contains(stderr, tt.inStderr) {
				t.Errorf("stderr does not say %q:\n%s", tt.inStderr, stderr)
			}
			if strings.Contains(stderr, "\r") {
				t.Errorf("progress drawn on a stderr that is not a terminal: %q", stderr)
			}
			if strings.Contains(tt.inStderr, "fetched nothing") {
				if strings.Contains(stdout+stderr, "analyze it with") {
					t.Errorf("a fetch of nothing suggests analyzing it:\n%s\n%s", stdout, stderr)
				}
				if strings.Contains(tt.name, "Prometheus") && !strings.Contains(stderr, "prometheus failed") {
					t.Errorf("the last line does not name Prometheus:\n%s", stderr)
				}
			}
			if tt.want == exitUsage {
				return
			}
			b, err := bundle.Open(out)
			if err != nil {
				t.Fatalf("no bundle: %v", err)
			}
			if tt.want == exitOK && (len(b.Access) != 1 || len(b.Metrics) != 1 || !strings.Contains(stdout, "wrote "+out)) {
				t.Errorf("bundle %+v, stdout %q", b, stdout)
			}
			if tt.name == "quiet" && stderr != "" {
				t.Errorf("--quiet printed %q", stderr)
			}
		})
	}
}

// runCounter is a progress that counts the detectors' runs of one
// analysis: the pipeline tells the inputs' progress "detecting" before each
// run. Each analysis has its own, since tests analyzing live run in
// parallel.
type runCounter struct{ runs atomic.Int64 }

func (c *runCounter) Stage(name string, _ int64) {
	if name == "detecting" {
		c.runs.Add(1)
	}
}
func (*runCounter) Read(int64) {}

// analyzeLive analyzes [from, to) as analyze --config does, from the
// sources config names, and says how many times the detectors ran.
func analyzeLive(t *testing.T, config string, from, to time.Time) (a *analysis.Analysis, detectorRuns int) {
	t.Helper()
	var stderr bytes.Buffer
	counter := &runCounter{}
	in, d, cleanup, err := liveInputs(context.Background(), config, 0, from.Format(time.RFC3339), to.Format(time.RFC3339), "", &stderr,
		func(in *evidence.Inputs) { in.Progress = counter })
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	// Every language: the tests read the postmortem in en and ko.
	a, err = analyzeInputs(context.Background(), *in, d)
	if err != nil {
		t.Fatal(err)
	}
	return a, int(counter.runs.Load())
}

// TestLiveInputsAnalyzeLikeABundle: analyze --config fetches into a
// temporary bundle whose inputs the usual pipeline analyzes.
func TestLiveInputsAnalyzeLikeABundle(t *testing.T) {
	t.Parallel()
	config, _, _, from, to := liveFakes(t)
	// A misspelt key reaches the report's data_quality, not only stderr.
	appendConfig(t, config, "pushdown_afer: 3h\n")
	var stderr bytes.Buffer
	in, d, cleanup, err := liveInputs(context.Background(), config, 0, from.Format(time.RFC3339), to.Format(time.RFC3339), "", &stderr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Access) != 1 || len(in.Metrics) != 1 || in.Manifest.Timezone != "Asia/Seoul" || !in.Manifest.Window.From.Equal(from) {
		t.Fatalf("inputs %+v", in)
	}
	rep, err := analyzeInputs(context.Background(), *in, d, "en")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Report.Evidence.Requests == 0 {
		t.Errorf("the live analysis saw no request")
	}
	warned := false
	for _, n := range rep.Report.DataQuality {
		warned = warned || (n.Severity == sources.SeverityWarning && strings.Contains(n.Message, `unknown key "pushdown_afer", ignored (did you mean "pushdown_after"?)`))
	}
	if !warned || !strings.Contains(stderr.String(), `unknown key "pushdown_afer"`) {
		t.Errorf("the unknown key is not in data_quality and on stderr: %+v\n%s", rep.Report.DataQuality, stderr.String())
	}
	dir := filepath.Dir(filepath.Dir(in.Access[0]))
	cleanup()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cleanup left %s", dir)
	}

	if _, _, _, err := liveInputs(context.Background(), config, time.Hour, from.Format(time.RFC3339), "", "", &stderr, nil); exitCode(err) != exitUsage {
		t.Errorf("--since with --from: %v", err)
	}
	if _, _, _, err := liveInputs(context.Background(), filepath.Join(t.TempDir(), "none.yaml"), time.Hour, "", "", "", &stderr, nil); exitCode(err) != exitUsage {
		t.Errorf("missing configuration: %v", err)
	}
}

func TestFormatProgress(t *testing.T) {
	now := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		p    live.Progress
		want string
	}{
		{live.Progress{Source: "loki", Phase: "access log", Unit: "lines", Count: 12345, Bytes: 3 << 20, Requests: 40, Done: 3, Total: 27, Started: now.Add(-30 * time.Second)},
			"loki access log: 12,345 lines, 3.0 MB, 40 requests, sub-ranges 3/27, ETA 4m0s"},
		{live.Progress{Source: "prometheus", Phase: "series", Unit: "series", Count: 31, Requests: 30, Done: 30, Total: 30, Started: now.Add(-2 * time.Second), Finished: true},
			"prometheus series: 31 series, 30 requests, queries 30/30, done in 2s"},
		{live.Progress{Source: "cloudwatch", Phase: "metrics", Unit: "datapoints"},
			"cloudwatch metrics: 0 datapoints"},
	}
	for _, tt := range tests {
		if got := formatProgress(tt.p, now); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}

func TestLiveWindow(t *testing.T) {
	now := time.Date(2026, 10, 3, 2, 30, 15, 500, time.UTC)
	from, to, err := liveWindow(2*time.Hour, "", "", now, nil)
	if err != nil || !to.Equal(now.Truncate(time.Second)) || to.Sub(from) != 2*time.Hour {
		t.Errorf("--since 2h: %v %v %v", from, to, err)
	}
	from, to, err = liveWindow(0, "2026-10-03T02:00:00+09:00", "2026-10-03T03:30:00+09:00", now, nil)
	if err != nil || from.Location() != time.UTC || from.Hour() != 17 || to.Sub(from) != 90*time.Minute {
		t.Errorf("--from/--to: %v %v %v", from, to, err)
	}
	for _, bad := range [][3]string{{"", "2026-10-03T02:00:00Z", ""}, {"", "yesterday", "2026-10-03T02:00:00Z"}} {
		if _, _, err := liveWindow(0, bad[1], bad[2], now, nil); exitCode(err) != exitUsage {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// TestProgressPrinterRedraws: on a terminal a phase redraws one line in place
// and ends it when the phase is done (at 100%); a phase cut short stays as it
// stood; elsewhere nothing is drawn.
func TestProgressPrinterRedraws(t *testing.T) {
	var buf bytes.Buffer
	p := &progressPrinter{w: &buf, enabled: true}
	start := time.Now()
	p.report(live.Progress{Source: "loki", Phase: "access log", Unit: "lines", Count: 10, Done: 1, Total: 4, Started: start})
	p.report(live.Progress{Source: "loki", Phase: "access log", Unit: "lines", Count: 20, Done: 2, Total: 4, Started: start})
	p.report(live.Progress{Source: "loki", Phase: "access log", Unit: "lines", Count: 40, Done: 4, Total: 4, Started: start, Finished: true})
	p.report(live.Progress{Source: "prometheus", Phase: "series", Unit: "series", Count: 3, Done: 1, Total: 6, Started: start})
	p.close()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines drawn, want one per phase: %q", len(lines), buf.String())
	}
	last := func(l string) string { return l[strings.LastIndex(l, "\r")+1:] }
	if l := last(lines[0]); !strings.Contains(l, "40 lines") || !strings.Contains(l, "100%") {
		t.Errorf("the finished phase ends as %q", l)
	}
	if l := last(lines[1]); !strings.Contains(l, "queries 1/6") || strings.Contains(l, "100%") {
		t.Errorf("the phase cut short ends as %q", l)
	}
	if newProgressPrinter(&buf, true).enabled {
		t.Error("a buffer is not a terminal")
	}
}

// TestAnalyzeLiveSourcesDown: with Loki and Prometheus both failing, the
// last line of analyze --config names them, not empty files.
func TestAnalyzeLiveSourcesDown(t *testing.T) {
	t.Parallel()
	config, lk, pr, from, to := liveFakes(t)
	lk.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
		http.Error(w, "ingester unavailable", http.StatusServiceUnavailable)
		return true
	})
	pr.SetBefore(func(w http.ResponseWriter, r *http.Request, n int) bool {
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	code, msg := runCLI([]string{"analyze", "--config", config, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339), "--out", t.TempDir()}, nil)
	if code != exitUsage {
		t.Fatalf("exit %d (%s), want 2", code, msg)
	}
	for _, want := range []string{"loki could not be read", "prometheus could not be read"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the last line does not say %q: %s", want, msg)
		}
	}
	for _, wrong := range []string{"are empty", "no usable sample in the metrics files"} {
		if strings.Contains(msg, wrong) {
			t.Errorf("the last line blames the files (%q): %s", wrong, msg)
		}
	}
}
