package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources"
)

// simulated is the simulator's reference incident written once, with its
// access-log lines in memory, for tests that lay the same evidence out as
// people have it (rotated, holed, re-encoded).
type simulated struct {
	dir   string      // the bundle as written
	lines [][]byte    // its access-log lines, in file order
	times []time.Time // each line's time
}

var incident once[*simulated]

// simulateIncident is the reference incident with its lines read, once per
// test binary. Tests must not change it.
func simulateIncident(t *testing.T) *simulated {
	t.Helper()
	dir := referenceBundle(t)
	return incident.get(t, func() (*simulated, error) {
		lines, times, err := readTimedLines(filepath.Join(dir, "access", "access.log.gz"))
		return &simulated{dir: dir, lines: lines, times: times}, err
	})
}

// layout copies the bundle without its access log into a new directory, for
// the caller to lay access/ out; edit, when not nil, rewrites bundle.yaml.
func (s *simulated) layout(t *testing.T, edit func(manifest string) string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := copyBundleWithout(dir, s.dir, filepath.Join("access", "access.log.gz")); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		p := filepath.Join(dir, "bundle.yaml")
		if err := os.WriteFile(p, []byte(edit(string(mustRead(t, p)))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// copyBundleWithout copies the bundle src into dst but for the file skip (a
// path inside src), which must exist: the copy does not read what the
// caller replaces.
func copyBundleWithout(dst, src, skip string) error {
	if _, err := os.Stat(filepath.Join(src, skip)); err != nil {
		return err
	}
	return os.CopyFS(dst, skipFS{os.DirFS(src), filepath.ToSlash(skip)})
}

// skipFS is an fs.FS without one of its files.
type skipFS struct {
	fs.FS
	skip string
}

func (s skipFS) ReadDir(name string) ([]fs.DirEntry, error) {
	es, err := fs.ReadDir(s.FS, name)
	return slices.DeleteFunc(es, func(e fs.DirEntry) bool { return path.Join(name, e.Name()) == s.skip }), err
}

// at is the index of the first line at or after tm.
func (s *simulated) at(tm time.Time) int {
	for i, x := range s.times {
		if !x.Before(tm) {
			return i
		}
	}
	return len(s.times)
}

// analyzeJSON runs analyze with args and returns its exit code, message and
// report.json as a generic document.
func analyzeJSON(t *testing.T, args ...string) (int, string, map[string]any) {
	t.Helper()
	out := t.TempDir()
	code, msg := runCLI(append([]string{"analyze", "--out", out, "--format", "json"}, args...), nil)
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatalf("exit %d (%s), no report.json: %v", code, msg, err)
	}
	var r map[string]any
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return code, msg, r
}

// withoutInputListing drops from a report what says how the access log was
// laid out in files (how many, their lines and bytes, each one's span, and
// the notes that name what one file shared with another), leaving what the
// evidence says.
func withoutInputListing(r map[string]any) map[string]any {
	ev := r["evidence"].(map[string]any)
	for _, k := range []string{"access_files", "lines", "bytes"} {
		delete(ev, k)
	}
	for _, c := range r["coverage"].([]any) {
		delete(c.(map[string]any), "inputs")
	}
	var dq []any
	for _, n := range r["data_quality"].([]any) {
		if m := n.(map[string]any); m["severity"] == "info" && (strings.Contains(m["message"].(string), "counted once") || strings.Contains(m["message"].(string), ": not read: ")) {
			continue
		}
		dq = append(dq, n)
	}
	r["data_quality"] = dq
	return r
}

// accessCoverageOf returns report.json's access coverage.
func accessCoverageOf(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	for _, c := range r["coverage"].([]any) {
		if m := c.(map[string]any); m["source"] == "access" {
			return m
		}
	}
	t.Fatal("no access coverage")
	return nil
}

// analyzeRun is one run of analyze: its exit code, message and report.json.
type analyzeRun struct {
	code int
	msg  string
	data []byte
}

// decode is the report as a generic document, a new one at each call: tests
// that share the run may change what they get.
func (r analyzeRun) decode(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// referenceReport is the reference incident (simulateIncident's bundle, as
// simulated) analyzed as `analyze --format json` does: the report a test
// compares a re-laid or re-encoded copy with. It is the analysis
// analyzedScenario already made of that bundle, not a run of its own. It
// fails the test unless the run would exit 0 (its data_quality is complete).
func referenceReport(t *testing.T) map[string]any {
	t.Helper()
	simulateIncident(t)
	if incomplete(analyzedScenario(t, "crawler-backlog").DataQuality) {
		t.Fatalf("the bundle as simulated: evidence incomplete, exit %d", exitIncomplete)
	}
	return analyzeRun{data: scenarioReportJSON(t, "crawler-backlog")}.decode(t)
}

// TestEvidenceLayouts lays the simulator's reference incident out as people
// have it and checks that analyze reads the same evidence from it, or names
// what the layout lost. One layout (logrotate's) is analyzed in full and its
// report compared with the one file's; the others compare what analyze
// loads (loadLayout: requests, minutes, fingerprints, events, coverage,
// notes), from which the same detectors, rules and report follow. Each
// layout is a parallel subtest on its own copy.
func TestEvidenceLayouts(t *testing.T) {
	t.Parallel()
	sim := simulateIncident(t)
	referenceReport(t) // fails here, once, if the reference cannot be made
	n := len(sim.lines)
	onset := time.Date(2026, 10, 2, 17, 35, 0, 0, time.UTC)
	resume := onset.Add(35 * time.Minute)

	t.Run("logrotate's layout with overlaps reads as the one file", func(t *testing.T) {
		t.Parallel()
		b := sim.layout(t, nil)
		a, c := n*4/10, n*7/10
		// access.log.2.gz, access.log.1 and access.log, each repeating the
		// last few hundred lines of the one before (copytruncate's overlap),
		// and a file that is not a log.
		writeLines(t, filepath.Join(b, "access", "access.log.2.gz"), sim.lines[:a+300], true)
		writeLines(t, filepath.Join(b, "access", "access.log.1"), sim.lines[a:c+150], false)
		writeLines(t, filepath.Join(b, "access", "access.log"), sim.lines[c:], false)
		os.WriteFile(filepath.Join(b, "access", "README"), []byte("rotated daily\n"), 0o644)
		code, msg, r := analyzeJSON(t, "--bundle", b)
		if code != exitOK {
			t.Errorf("exit %d (%s), want 0 as for the one file", code, msg)
		}
		cov := accessCoverageOf(t, r)
		inputs, _ := cov["inputs"].([]any)
		if len(inputs) != 4 {
			t.Fatalf("coverage.inputs %v, want the three files read and the README not read", inputs)
		}
		if in := inputs[0].(map[string]any); !strings.HasSuffix(in["name"].(string), "access.log.2.gz") || in["first"] == nil {
			t.Errorf("first input %v, want access.log.2.gz with its span", in)
		}
		if in := inputs[3].(map[string]any); in["not_read"] == nil {
			t.Errorf("last input %v, want README, not read", in)
		}
		ref := referenceReport(t)
		if !reflect.DeepEqual(withoutInputListing(ref), withoutInputListing(r)) {
			a, _ := json.MarshalIndent(withoutInputListing(ref), "", " ")
			b, _ := json.MarshalIndent(withoutInputListing(r), "", " ")
			t.Errorf("the rotated layout's report differs from the one file's:\n%s", firstDifference(string(a), string(b)))
		}
	})

	t.Run("a rotation that lost 35 minutes names the gap and the files", func(t *testing.T) {
		t.Parallel()
		b := sim.layout(t, nil)
		writeLines(t, filepath.Join(b, "access", "access.log.1"), sim.lines[:sim.at(onset)], false)
		writeLines(t, filepath.Join(b, "access", "access.log"), sim.lines[sim.at(resume):], false)
		l := loadLayout(t, b, "")
		if !l.Incomplete {
			t.Errorf("read as complete (exit 0), want exit 1: 35 minutes of the access log are missing")
		}
		var gaps []sources.Stretch
		for _, c := range l.Coverage {
			if c.Source != "access" {
				continue
			}
			for _, u := range c.Uncovered {
				if u.Kind == "gap" {
					gaps = append(gaps, u)
				}
			}
		}
		if len(gaps) != 1 {
			t.Fatalf("gaps %v, want one", gaps)
		}
		g := gaps[0]
		if !g.From.Equal(onset) || !g.To.Equal(resume) {
			t.Errorf("gap %v to %v, want %s to %s", g.From, g.To, onset, resume)
		}
		if !strings.HasSuffix(g.After, "access.log.1") || !strings.HasSuffix(g.Before, "access/access.log") {
			t.Errorf("gap between %v and %v, want access.log.1 and access.log", g.After, g.Before)
		}
		if g.Expected < 1000 {
			t.Errorf("gap expected %v lines, want the thousands the incident's rate writes", g.Expected)
		}
		if !slices.ContainsFunc(l.Notes, func(n string) bool { return strings.Contains(n, "lines lost between rotated files") }) {
			t.Errorf("no data_quality note names the rotation's gap: %v", l.Notes)
		}
	})

	// The harmless input and the console cases lay out the 40 minutes from
	// 16:40 to 17:20Z, the end of the quiet baseline and the crawl's first
	// minutes (6,400 of the day's 48,700 lines), their bundle.yaml's window
	// and baseline cut to them: what they compare is how each line is read
	// (skipped or not, its time), and read in a wrong zone every line sits
	// hours away from those minutes.
	spanFrom, spanTo := time.Date(2026, 10, 2, 16, 40, 0, 0, time.UTC), time.Date(2026, 10, 2, 17, 20, 0, 0, time.UTC)
	const simulatedSpan = "window:\n  from: 2026-10-02T17:00:00Z\n  to: 2026-10-02T18:30:00Z\nbaseline:\n  from: 2026-10-02T15:00:00Z\n  to: 2026-10-02T17:00:00Z\n"
	const cutSpan = "window:\n  from: 2026-10-02T17:00:00Z\n  to: 2026-10-02T17:20:00Z\nbaseline:\n  from: 2026-10-02T16:40:00Z\n  to: 2026-10-02T17:00:00Z\n"
	spanManifest := func(m string) string { return strings.Replace(m, simulatedSpan, cutSpan, 1) }
	spanLo, spanHi := sim.at(spanFrom), sim.at(spanTo)
	// spanLayout is a copy of the bundle with its window cut to those
	// minutes, edit (when not nil) applied to its bundle.yaml after, and
	// access/ left for the caller.
	spanLayout := func(t *testing.T, edit func(manifest string) string) string {
		t.Helper()
		b := sim.layout(t, func(m string) string {
			if m = spanManifest(m); edit != nil {
				m = edit(m)
			}
			return m
		})
		if !strings.Contains(string(mustRead(t, filepath.Join(b, "bundle.yaml"))), cutSpan) {
			t.Fatalf("bundle.yaml's window and baseline are not the simulated ones:\n%s", mustRead(t, filepath.Join(sim.dir, "bundle.yaml")))
		}
		return b
	}
	// loadSpan loads a copy of the bundle whose access log holds line(i)
	// for each line i of those minutes, its window cut to them.
	loadSpan := func(name string, line func(i int) ([]byte, error)) (loadedEvidence, error) {
		b, err := os.MkdirTemp(fixtureDir, name)
		if err != nil {
			return loadedEvidence{}, err
		}
		defer os.RemoveAll(b)
		b = filepath.Join(b, "bundle")
		if err := copyBundleWithout(b, sim.dir, filepath.Join("access", "access.log.gz")); err != nil {
			return loadedEvidence{}, err
		}
		manifest := filepath.Join(b, "bundle.yaml")
		m, err := os.ReadFile(manifest)
		if err != nil {
			return loadedEvidence{}, err
		}
		if !strings.Contains(string(m), simulatedSpan) {
			return loadedEvidence{}, fmt.Errorf("bundle.yaml's window and baseline are not the simulated ones:\n%s", m)
		}
		if err := os.WriteFile(manifest, []byte(spanManifest(string(m))), 0o644); err != nil {
			return loadedEvidence{}, err
		}
		lines := make([][]byte, 0, spanHi-spanLo)
		for i := spanLo; i < spanHi; i++ {
			l, err := line(i)
			if err != nil {
				return loadedEvidence{}, err
			}
			lines = append(lines, l)
		}
		if err := writeLinesErr(filepath.Join(b, "access", "access.log"), lines, false); err != nil {
			return loadedEvidence{}, err
		}
		return loadLayoutErr(b, "")
	}
	// spanLoaded is what those minutes of the log as simulated load, once.
	var spanRef once[loadedEvidence]
	spanLoaded := func(t *testing.T) loadedEvidence {
		t.Helper()
		return spanRef.get(t, func() (loadedEvidence, error) {
			return loadSpan("span-reference-", func(i int) ([]byte, error) { return sim.lines[i], nil })
		})
	}

	t.Run("harmless input: notes in bundle.yaml, Caddy's own lines in the journal, leave the run complete", func(t *testing.T) {
		t.Parallel()
		b := spanLayout(t, func(m string) string {
			m = strings.Replace(m, "site:\n", "site:\n  app: mediawiki\n  upstream: 127.0.0.1:9000\n", 1)
			return m + "contents:\n  access: access/access.log (journalctl -u caddy -o cat)\nnote: >-\n  Paged at 02:40 KST.\n"
		})
		// journalctl -o cat: Caddy's own lines (its default logger's,
		// without a logger key, and the health checker's) among the
		// access log's, in time order.
		own := func(tm time.Time, logger, msg string) []byte {
			l := map[string]any{"level": "info", "ts": float64(tm.UnixNano()) / 1e9, "msg": msg}
			if logger != "" {
				l["logger"] = logger
			}
			data, _ := json.Marshal(l)
			return data
		}
		start := sim.times[spanLo]
		mixed := [][]byte{own(start, "", "using config from file"), own(start, "", "serving initial configuration")}
		for i := spanLo; i < spanHi; i++ {
			if i%500 == 0 {
				mixed = append(mixed, own(sim.times[i], "http.handlers.reverse_proxy.health_checker.active", "HTTP request failed"))
			}
			mixed = append(mixed, sim.lines[i])
		}
		writeLines(t, filepath.Join(b, "access", "access.log"), mixed, false)
		l := loadLayout(t, b, "")
		var infos []string
		for _, n := range l.Notes {
			if !strings.HasPrefix(n, "info: ") {
				t.Errorf("note: %s", n)
				continue
			}
			infos = append(infos, n)
		}
		text := strings.Join(infos, "\n")
		want := []string{fmt.Sprintf("%d lines skipped: not an access log line", len(mixed)-(spanHi-spanLo)), `unknown key "contents"`, `unknown key "app" in site`, `unknown key "upstream" in site`}
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("no info note says %q:\n%s", w, text)
			}
		}
		// Nothing the analysis needs is missing: it reads what the
		// minutes as simulated do (exit 0, as referenceReport's).
		sameLoaded(t, spanLoaded(t), l.withoutNotes(want...))
	})

	// consoleLines re-encodes the lines lo to hi (excluded) as Caddy's
	// console encoder writes them (time to the millisecond, without a zone,
	// in loc). Each line is split once (consoleParts) for the subtests that
	// lay it out.
	type consolePart struct {
		logger, msg string
		fields      []byte // the other fields, as the encoder writes them
	}
	var consoleParts once[[]consolePart]
	consoleLines := func(t *testing.T, loc *time.Location, lo, hi int) [][]byte {
		parts := consoleParts.get(t, func() ([]consolePart, error) {
			parts := make([]consolePart, len(sim.lines))
			for i, l := range sim.lines {
				// A line as Caddy's JSON encoder opens it holds the other
				// fields after msg, in the order the console encoder writes
				// them: cut there rather than decoded and encoded again
				// (decoding every line was a second and a half of CPU).
				if logger, msg, fields, ok := consoleSplit(l); ok {
					parts[i] = consolePart{logger, msg, fields}
					continue
				}
				var m map[string]any
				if err := json.Unmarshal(l, &m); err != nil {
					return nil, fmt.Errorf("line %d: %w", i+1, err)
				}
				logger, msg := m["logger"].(string), m["msg"].(string)
				for _, k := range []string{"level", "ts", "logger", "msg"} {
					delete(m, k)
				}
				fields, err := json.Marshal(m)
				if err != nil {
					return nil, err
				}
				parts[i] = consolePart{logger, msg, fields}
			}
			return parts, nil
		})
		out := make([][]byte, 0, hi-lo)
		for i, p := range parts[lo:hi] {
			out = append(out, fmt.Appendf(nil, "%s\tINFO\t%s\t%s\t%s", sim.times[lo+i].In(loc).Format("2006/01/02 15:04:05.000"), p.logger, p.msg, p.fields))
		}
		return out
	}
	// The console encoder writes times to the millisecond: the reference
	// for it is the JSON log of the same minutes with its times cut to the
	// millisecond, loaded once for the parallel subtests that compare with
	// it.
	var msRef once[loadedEvidence]
	msReference := func(t *testing.T) loadedEvidence {
		t.Helper()
		r := msRef.get(t, func() (loadedEvidence, error) {
			// Each line with its ts alone rewritten, where Caddy's
			// encoder writes it.
			return loadSpan("ms-reference-", func(i int) ([]byte, error) {
				l := sim.lines[i]
				from, to, ok := leadingTS(l)
				if !ok {
					return nil, fmt.Errorf("line %d does not open with level and ts: %.80s", i+1, l)
				}
				ms := float64(sim.times[i].Truncate(time.Millisecond).UnixMilli()) / 1e3
				c := append(slices.Clip(l[:from]), strconv.FormatFloat(ms, 'f', -1, 64)...)
				return append(c, l[to:]...), nil
			})
		})
		if r.Incomplete {
			t.Fatalf("the JSON log to the millisecond: read as incomplete: %v", r.Notes)
		}
		return r
	}
	// sameTimes compares what a layout loads with what the JSON log's
	// does but for the notes on how the lines were encoded.
	sameTimes := func(t *testing.T, l loadedEvidence) {
		t.Helper()
		encoding := []string{"console encoder", "have no zone"}
		sameLoaded(t, msReference(t).withoutNotes(encoding...), l.withoutNotes(encoding...))
	}
	seoul, _ := time.LoadLocation("Asia/Seoul")

	t.Run("console encoder in a bundle with timezone Asia/Seoul: UTC, as Caddy writes", func(t *testing.T) {
		t.Parallel()
		b := spanLayout(t, nil) // the simulated bundle's timezone is Asia/Seoul
		writeLines(t, filepath.Join(b, "access", "access.log"), consoleLines(t, time.UTC, spanLo, spanHi), false)
		sameTimes(t, loadLayout(t, b, ""))
	})

	t.Run("console encoder with time_local in the bundle's Caddyfile: the bundle's zone", func(t *testing.T) {
		t.Parallel()
		b := spanLayout(t, nil)
		cf := filepath.Join(b, "changes", "config", "Caddyfile")
		data := strings.Replace(string(mustRead(t, cf)), "format json", "format console {\n\t\t\ttime_local\n\t\t}", 1)
		if err := os.WriteFile(cf, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		writeLines(t, filepath.Join(b, "access", "access.log"), consoleLines(t, seoul, spanLo, spanHi), false)
		hostLocalFPMLog(t, b, seoul)
		sameTimes(t, loadLayout(t, b, ""))
	})

	t.Run("console encoder in local time given by --log-tz", func(t *testing.T) {
		t.Parallel()
		b := spanLayout(t, nil)
		tokyo, _ := time.LoadLocation("Asia/Tokyo")
		writeLines(t, filepath.Join(b, "access", "access.log"), consoleLines(t, tokyo, spanLo, spanHi), false)
		hostLocalFPMLog(t, b, tokyo)
		sameTimes(t, loadLayout(t, b, "Asia/Tokyo"))
	})

	// replay sends the requests logged in its range: read in the wrong zone
	// the console log's 17:20Z lines sit nine hours off and none is sent.
	// The log holds the ten minutes around the range: replay reads its
	// whole file, and the rest of the day is nothing it sends.
	t.Run("replay reads the console encoder's times in --log-tz", func(t *testing.T) {
		t.Parallel()
		b := sim.layout(t, nil)
		tokyo, _ := time.LoadLocation("Asia/Tokyo")
		from, to := time.Date(2026, 10, 2, 17, 20, 0, 0, time.UTC), time.Date(2026, 10, 2, 17, 20, 20, 0, time.UTC)
		writeLines(t, filepath.Join(b, "access", "access.log"), consoleLines(t, tokyo, sim.at(from.Add(-5*time.Minute)), sim.at(to.Add(5*time.Minute))), false)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
		defer srv.Close()
		out := filepath.Join(t.TempDir(), "replay")
		if code := runQuiet(t, []string{"replay", "--bundle", b, "--log-tz", "Asia/Tokyo", "--target", srv.URL, "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339),
			"--speed", "20", "--client-timeout", "10s", "--max-lag", "10s", "--out", out}); code != exitOK {
			t.Fatalf("replay exited %d", code)
		}
		var rep struct {
			Classes map[string]struct {
				Sent int `json:"sent"`
			} `json:"classes"`
		}
		if err := json.Unmarshal(mustRead(t, filepath.Join(out, "replay.json")), &rep); err != nil {
			t.Fatal(err)
		}
		// The lines logged in the range, give or take those that arrived
		// before it (replay places a request at its arrival).
		logged := sim.at(to) - sim.at(from)
		if sent := rep.Classes["all"].Sent; sent < logged*8/10 || sent > logged*12/10 {
			t.Errorf("replay sent %d requests from 17:20:00Z to 17:20:20Z; the log holds %d lines there", sent, logged)
		}
	})
}

// consoleSplit cuts a line that opens as Caddy's JSON encoder writes one,
// {"level":"L","ts":N,"logger":"LOGGER","msg":"MSG",FIELDS}, into its
// logger, its msg and its other fields as a JSON object; ok is false for any
// other line, or one whose logger or msg holds an escape.
func consoleSplit(line []byte) (logger, msg string, fields []byte, ok bool) {
	_, to, ok := leadingTS(line)
	if !ok {
		return "", "", nil, false
	}
	rest := line[to:]
	str := func(key string) (string, bool) {
		open := `,"` + key + `":"`
		if !bytes.HasPrefix(rest, []byte(open)) {
			return "", false
		}
		rest = rest[len(open):]
		end := bytes.IndexByte(rest, '"')
		if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
			return "", false
		}
		v := string(rest[:end])
		rest = rest[end+1:]
		return v, true
	}
	if logger, ok = str("logger"); !ok {
		return "", "", nil, false
	}
	if msg, ok = str("msg"); !ok || len(rest) < 2 || rest[0] != ',' {
		return "", "", nil, false
	}
	return logger, msg, append([]byte{'{'}, rest[1:]...), true
}

// firstDifference shows where two renderings first differ.
func firstDifference(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			lo := max(0, i-3)
			return "want:\n" + strings.Join(la[lo:min(len(la), i+3)], "\n") + "\ngot:\n" + strings.Join(lb[lo:min(len(lb), i+3)], "\n")
		}
	}
	return "lengths differ"
}

// TestFractionalMilliseconds: the simulated incident's durations rewritten
// as a log shipper's transform writes them (duration*1000, a fraction) are
// read as milliseconds, with a warning that says so, and the report is the
// one of the seconds log; read as seconds, every PHP request was late.
func TestFractionalMilliseconds(t *testing.T) {
	t.Parallel()
	sim := simulateIncident(t)
	ref := referenceReport(t)
	b := sim.layout(t, nil)
	ms := make([][]byte, len(sim.lines))
	for i, l := range sim.lines {
		// The duration's number alone rewritten, in place: the line's
		// one "duration" key is Caddy's top-level field.
		at := bytes.Index(l, []byte(`"duration":`))
		if at < 0 || bytes.Count(l, []byte(`"duration":`)) != 1 {
			t.Fatalf("line %d: want one duration field: %s", i+1, l)
		}
		from := at + len(`"duration":`)
		n := bytes.IndexAny(l[from:], ",}")
		if n < 0 {
			t.Fatalf("line %d: the duration does not end: %s", i+1, l)
		}
		to := from + n
		s, err := strconv.ParseFloat(string(l[from:to]), 64)
		if err != nil {
			t.Fatalf("line %d: duration %q: %v", i+1, l[from:to], err)
		}
		// A shipper's float: three decimals of a millisecond, always a fraction.
		m := fmt.Appendf(slices.Clip(l[:from]), "%.4f", s*1e3+5e-5)
		ms[i] = append(m, l[to:]...)
	}
	writeLines(t, filepath.Join(b, "access", "access.log"), ms, false)
	// The notes and the impact are the report's before the rules: the copy
	// is not proposed rules for.
	rep := reportBeforeRules(t, b)
	var warned bool
	for _, n := range rep.DataQuality {
		warned = warned || strings.Contains(n.Message, "read as milliseconds")
	}
	if !warned {
		t.Errorf("no note says the fractions were read as milliseconds: %v", rep.DataQuality)
	}
	// The report.json document, as analyze writes it (report.Render, as
	// the reference's was).
	data, err := report.Render(rep, report.FormatJSON, report.LangEN)
	if err != nil {
		t.Fatal(err)
	}
	r := analyzeRun{data: data}.decode(t)
	impact := func(r map[string]any) string {
		im := r["impact"].(map[string]any)
		delete(im, "caveats") // the detection's warning is one of them
		data, _ := json.Marshal(im)
		return string(data)
	}
	if a, b := impact(ref), impact(r); a != b {
		t.Errorf("impact with fractional milliseconds\n%s\nwant the seconds log's\n%s", b, a)
	}
}
