package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

// countingAggregate stands in for detect's Traffic: ingest only streams
// requests into it.
type countingAggregate struct {
	n           int
	first, last time.Time
}

func newCounting(sources.Site, time.Time, time.Time) evidence.Aggregate { return &countingAggregate{} }

func (a *countingAggregate) Observe(r *sources.Request) {
	if a.n == 0 || r.Time.Before(a.first) {
		a.first = r.Time
	}
	if r.Time.After(a.last) {
		a.last = r.Time
	}
	a.n++
}

func (a *countingAggregate) AddMinuteStatus(rows []bundle.MinuteStatus) int {
	return len(rows)
}

func (a *countingAggregate) Span() (time.Time, time.Time) { return a.first, a.last }
func (a *countingAggregate) Total() int                   { return a.n }

// A Load that fails part way leaves nothing behind: not the spill of the
// requests already read, not the metric store already filled. (A bad
// minute-status file used to return before closing either.)
func TestLoadFailureLeavesNothingOpen(t *testing.T) {
	access, err := filepath.Abs("../accesslog/testdata/lab-sample.log")
	if err != nil {
		t.Fatal(err)
	}
	inputs := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(inputs, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The lab sample's requests are from 2026-11-29 around 02:13 UTC.
	from := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	metricsFile := write("pool.prom", "phpfpm_active_processes{pool=\"www\"} 3 1795966435000\n")
	for _, tt := range []struct {
		name   string
		broken func(in *evidence.Inputs)
		names  string
	}{
		{"minute status", func(in *evidence.Inputs) {
			in.MinuteStatus = write("minute-status.csv", "minute,status,origin,late,requests,php_seconds\nnot a time,200,upstream,0,1,0.1\n")
		}, "minute-status.csv"},
		{"changes", func(in *evidence.Inputs) {
			in.Changes = []string{write("changes.yaml", "changes: [this is not a list of changes\n")}
		}, "changes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			in := evidence.Inputs{Access: []string{access}, Metrics: []string{metricsFile}, KeepRequests: true}
			in.Manifest.Window.From, in.Manifest.Window.To = from, from.Add(time.Hour)
			tt.broken(&in)
			l, err := Load(context.Background(), in, time.UTC, newCounting)
			if err == nil {
				l.Close()
				t.Fatal("Load read a broken input without an error")
			}
			if !strings.Contains(err.Error(), tt.names) {
				t.Errorf("error %q does not name %s", err, tt.names)
			}
			left, err := os.ReadDir(tmp)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range left {
				t.Errorf("left behind after the failed Load: %s", e.Name())
			}
		})
	}
}

// The evidence's own span is the window when none is given, and the access
// log streams into the aggregate the caller made.
func TestLoadWindowFromSpan(t *testing.T) {
	access, err := filepath.Abs("../accesslog/testdata/lab-sample.log")
	if err != nil {
		t.Fatal(err)
	}
	l, err := Load(context.Background(), evidence.Inputs{Access: []string{access}}, time.UTC, newCounting)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	agg, ok := l.Traffic.(*countingAggregate)
	if !ok || agg.n == 0 {
		t.Fatalf("traffic %#v: the requests did not reach the caller's aggregate", l.Traffic)
	}
	if want := agg.first.Truncate(time.Minute); !l.From.Equal(want) || !l.To.Equal(agg.last.Truncate(time.Minute).Add(time.Minute)) {
		t.Errorf("window %v to %v, want the log's minutes %v to %v", l.From, l.To, want, agg.last)
	}
	if len(l.Coverage) == 0 || l.Coverage[0].Source != evidence.CoverageAccess {
		t.Errorf("coverage %+v: want the access log's first", l.Coverage)
	}
}

// An empty log that is gzipped is empty, not a log of unknown shape: on disk
// it holds gzip's header, so its size alone does not tell.
func TestEmptyGzippedLogIsEmpty(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "caddy.log.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.log")
	if err := os.WriteFile(other, []byte("not a log line anyone knows\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	access, err := filepath.Abs("../accesslog/testdata/lab-sample.log")
	if err != nil {
		t.Fatal(err)
	}
	l, err := Load(context.Background(), evidence.Inputs{Access: []string{access}, Logs: []string{empty, other}}, time.UTC, newCounting)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var said []string
	for _, n := range l.DataQuality {
		if n.Source == "logs" {
			said = append(said, n.Message)
		}
	}
	if len(said) != 2 || !strings.Contains(said[0], "caddy.log.gz is empty") || !strings.Contains(said[1], "other.log is neither") {
		t.Errorf("notes on the logs %q: want the gzipped one empty and the other of unknown shape", said)
	}
}

// A log in which not one of hundreds of requests carries a Cookie header omits
// the header: with a logged-in cookie named, the report says login cannot be
// judged. One logged Cookie, even redacted, says the log keeps them.
func TestLogWithoutCookiesIsSaid(t *testing.T) {
	line := func(i int, cookie string) string {
		headers := `{"User-Agent":["Mozilla/5.0"]` + cookie + `}`
		return fmt.Sprintf(`{"level":"info","ts":%d.5,"logger":"http.log.access.log0","msg":"handled request","request":{"client_ip":"203.0.113.%d","proto":"HTTP/2.0","method":"GET","host":"blog.example.org","uri":"/post-%d/","headers":%s},"duration":0.05,"size":900,"status":200,"resp_headers":{"Via":["2.0 Caddy"]}}`,
			1796000000+i, i%250+1, i, headers)
	}
	site := sources.Site{LoggedInCookie: `wordpress_logged_in_[0-9a-f]{32}=`}
	for _, tc := range []struct {
		name     string
		cookieAt int // the line that carries a Cookie header, -1 for none
		want     bool
	}{
		{"no cookie in the log", -1, true},
		{"one redacted cookie", 300, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			for i := range cookiesJudgedAfter + 100 {
				cookie := ""
				if i == tc.cookieAt {
					cookie = `,"Cookie":["REDACTED"]`
				}
				b.WriteString(line(i, cookie) + "\n")
			}
			access := filepath.Join(t.TempDir(), "access.log")
			if err := os.WriteFile(access, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := Load(context.Background(), evidence.Inputs{Access: []string{access}, Manifest: bundle.Manifest{Site: site}}, time.UTC, newCounting)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			said := false
			for _, n := range l.DataQuality {
				said = said || strings.Contains(n.Message, "logs a Cookie header")
			}
			if said != tc.want {
				t.Errorf("note that the log omits cookies: %v, want %v (notes %+v)", said, tc.want, l.DataQuality)
			}
		})
	}
}
