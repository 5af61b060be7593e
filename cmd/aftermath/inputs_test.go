package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// labAccess is the access log of the real lab recording (real Caddy 2.11 and
// php-fpm); the variants below are cut from it the way logs really break.
const labDir = "../../../shared/data/lab-incident"

// labOnset is when the recorded incident began (truth.json).
var labOnset = time.Date(2026, 11, 29, 15, 37, 10, 0, time.UTC)

// labLines returns the lab's access-log lines with their times.
func labLines(t *testing.T) ([][]byte, []time.Time) {
	t.Helper()
	lines, times, err := readTimedLines(filepath.Join(labDir, "access", "access.log.gz"))
	if errors.Is(err, fs.ErrNotExist) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the lab recording is needed in CI: %v", err)
		}
		t.Skipf("lab recording not available: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return lines, times
}

// runCLI runs aftermath with args and stdin, returning the exit code and the
// error message.
func runCLI(args []string, stdin []byte) (int, string) {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(bytes.NewReader(stdin))
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	if err == nil {
		return exitOK, ""
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, err.Error()
	}
	return exitUsage, err.Error()
}

type reportJSON struct {
	Window struct {
		From, To time.Time
	}
	Coverage []struct {
		Source    string
		State     string
		First     *time.Time
		Last      *time.Time
		Truncated []string
		Uncovered []struct {
			From, To time.Time
			Kind     string
		}
	}
	Impact struct {
		Requests     int `json:"requests"`
		LateRequests int `json:"late_requests"`
	}
	DataQuality []struct{ Source, Severity, Message string } `json:"data_quality"`
}

func readReport(t *testing.T, dir string) (reportJSON, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r reportJSON
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "postmortem.md"))
	if err != nil {
		t.Fatal(err)
	}
	return r, string(md)
}

func writeLines(t *testing.T, path string, lines [][]byte, gz bool) {
	t.Helper()
	if err := writeLinesErr(path, lines, gz); err != nil {
		t.Fatal(err)
	}
}

// writeLinesErr writes lines, each ending in a newline, gzipped when gz,
// streamed to the file: a buffer of the whole log grew by copying (tens of
// megabytes, several times per test).
func writeLinesErr(path string, lines [][]byte, gz bool) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	var w io.Writer = f
	var zw *gzip.Writer
	if gz {
		// Stored, not deflated: the reader inflates it all the same, and the
		// file is written and read once.
		zw, _ = gzip.NewWriterLevel(f, gzip.NoCompression)
		w = zw
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	for _, l := range lines {
		bw.Write(l)
		bw.WriteByte('\n')
	}
	err = bw.Flush()
	if zw != nil && err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func accessCoverage(t *testing.T, r reportJSON) (state string, last time.Time, truncated []string, tail time.Duration) {
	t.Helper()
	for _, c := range r.Coverage {
		if c.Source != "access" {
			continue
		}
		if c.Last != nil {
			last = *c.Last
		}
		for _, u := range c.Uncovered {
			if u.Kind == "tail" {
				tail = u.To.Sub(u.From)
			}
		}
		return c.State, last, c.Truncated, tail
	}
	t.Fatalf("no access coverage in report.json: %+v", r.Coverage)
	return
}

// The evidence as people have it: each variant gives the right numbers, or
// exit 2 with a message that says what the input is and what to do; none is
// a normal-looking report of a quiet site.
func TestEvidenceAsUsersHaveIt(t *testing.T) {
	t.Parallel()
	lines, times := labLines(t)
	dir := t.TempDir()
	var beforeOnset [][]byte
	var lastBeforeOnset time.Time
	for i, l := range lines {
		if times[i].Before(labOnset) {
			beforeOnset = append(beforeOnset, l)
			if times[i].After(lastBeforeOnset) {
				lastBeforeOnset = times[i]
			}
		}
	}
	plain := filepath.Join(dir, "caddy.log")
	writeLines(t, plain, lines, false)
	logDir := filepath.Join(dir, "logs")
	os.MkdirAll(logDir, 0o755)
	writeLines(t, filepath.Join(logDir, "access.log"), lines, false)
	os.WriteFile(filepath.Join(logDir, "README.txt"), []byte("not a log"), 0o644)

	// A .gz cut mid-file at the incident's onset: the lines before the onset
	// compressed, then the first bytes of the rest (the stream ends early).
	cut := filepath.Join(dir, "access.log.gz")
	{
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		for _, l := range beforeOnset {
			zw.Write(l)
			zw.Write([]byte{'\n'})
		}
		zw.Flush()
		n := buf.Len()
		for _, l := range lines[len(beforeOnset):] {
			zw.Write(l)
			zw.Write([]byte{'\n'})
		}
		zw.Close()
		os.WriteFile(cut, buf.Bytes()[:n+20], 0o644)
	}
	early := filepath.Join(dir, "early.log")
	writeLines(t, early, beforeOnset, false)

	// nginx's combined format, as a site migrating from nginx has it.
	nginx := filepath.Join(dir, "nginx.log")
	{
		var nl [][]byte
		for i := range 200 {
			nl = append(nl, []byte(fmt.Sprintf(`203.0.113.%d - - [29/Nov/2026:15:3%d:10 +0000] "GET /index.php?title=Special:Search HTTP/1.1" 200 5120 "-" "Mozilla/5.0"`, i%250, i%10)))
		}
		writeLines(t, nginx, nl, false)
	}
	cfg := filepath.Join(dir, "aftermath.yaml")
	os.WriteFile(cfg, []byte("timezone: Asia/Seoul\nloki:\n  url: http://loki.internal:3100\nsite:\n  worker: 4\n  client_timeout_s: 2\n"), 0o644)

	window := []string{"--from", "2026-11-29T15:33:10Z", "--to", "2026-11-29T15:47:10Z"}
	tests := []struct {
		name  string
		args  []string
		stdin []byte
		code  int
		// msg must be in the error (exit 2).
		msg   string
		check func(t *testing.T, r reportJSON, md string)
	}{
		{name: "no window: the logs' own span", args: []string{"--access", plain}, code: exitIncomplete,
			check: func(t *testing.T, r reportJSON, md string) {
				if want := times[0].Truncate(time.Minute); !r.Window.From.Equal(want) {
					t.Errorf("window.from = %s, want the first line's minute %s", r.Window.From, want)
				}
				if r.Impact.Requests != len(lines) {
					t.Errorf("requests = %d, want %d", r.Impact.Requests, len(lines))
				}
				if st, _, _, _ := accessCoverage(t, r); st != "complete" {
					t.Errorf("access coverage %s, want complete", st)
				}
			}},
		{name: "a directory of logs", args: []string{"--access", logDir}, code: exitIncomplete,
			check: func(t *testing.T, r reportJSON, md string) {
				if r.Impact.Requests != len(lines) {
					t.Errorf("requests = %d, want %d", r.Impact.Requests, len(lines))
				}
			}},
		{name: "standard input", args: []string{"--access", "-"}, stdin: mustRead(t, plain), code: exitIncomplete,
			check: func(t *testing.T, r reportJSON, md string) {
				if r.Impact.Requests != len(lines) {
					t.Errorf("requests = %d, want %d", r.Impact.Requests, len(lines))
				}
			}},
		{name: "gz cut at the onset", args: append([]string{"--access", cut}, window...), code: exitIncomplete,
			check: func(t *testing.T, r reportJSON, md string) {
				st, last, truncated, tail := accessCoverage(t, r)
				if st != "incomplete" || len(truncated) == 0 {
					t.Errorf("access coverage %s, truncated %v: want incomplete and truncated", st, truncated)
				}
				// Counted by the minute, the evidence ends with the minute of
				// the onset (the last line read is just before it).
				if want := lastBeforeOnset.Truncate(time.Minute).Add(time.Minute); !last.Equal(want) || want.Sub(labOnset) > time.Minute {
					t.Errorf("evidence ends at %s, want %s, the end of the onset's minute (%s)", last, want, labOnset)
				}
				if want := r.Window.To.Sub(last); tail != want {
					t.Errorf("missing tail %s, want %s", tail, want)
				}
				first := strings.SplitN(md, "\n", 6)
				if !strings.HasPrefix(first[2], "> Evidence incomplete.") || !strings.Contains(first[4], "ends at") || !strings.Contains(first[4], "Cut short") {
					t.Errorf("the report's first lines do not say the evidence ends:\n%s", strings.Join(first, "\n"))
				}
				if strings.Contains(md, "no more requests failed than usual") {
					t.Error("a truncated log reads as a quiet site")
				}
			}},
		{name: "a log that ends 80 minutes before the window", args: []string{"--access", early, "--from", "2026-11-29T15:33:10Z", "--to", "2026-11-29T16:57:10Z"}, code: exitIncomplete,
			check: func(t *testing.T, r reportJSON, md string) {
				st, last, _, tail := accessCoverage(t, r)
				// Coverage is counted by the minute: it ends with the minute
				// of the last line.
				if want := lastBeforeOnset.Truncate(time.Minute).Add(time.Minute); st != "incomplete" || !last.Equal(want) {
					t.Errorf("coverage %s ending %s, want incomplete ending %s", st, last, want)
				}
				if tail < 79*time.Minute {
					t.Errorf("missing tail %s, want about 80 min", tail)
				}
				if strings.Contains(md, "no more requests failed than usual") {
					t.Error("a log that stops reads as a quiet site")
				}
			}},
		{name: "a window without lines", args: []string{"--access", plain, "--from", "2026-11-30T15:33:10Z", "--to", "2026-11-30T15:47:10Z"},
			code: exitUsage, msg: "cannot judge: no access-log lines from 2026-11-30T15:33:10Z to 2026-11-30T15:47:10Z"},
		{name: "nginx combined lines", args: []string{"--access", nginx}, code: exitUsage, msg: "looks like nginx/Apache combined log format"},
		{name: "a time without a zone takes --tz", args: []string{"--access", plain, "--from", "2026-11-30 00:33:10", "--to", "2026-11-30 00:47:10", "--tz", "Asia/Seoul"},
			code: exitIncomplete,
			check: func(t *testing.T, r reportJSON, md string) {
				if want := time.Date(2026, 11, 29, 15, 33, 10, 0, time.UTC); !r.Window.From.Equal(want) {
					t.Errorf("window.from = %s, want %s", r.Window.From, want)
				}
			}},
		{name: "a time without a zone and no zone", args: []string{"--access", plain, "--from", "2026-11-30 00:33", "--to", "2026-11-30 00:47"},
			code: exitUsage, msg: `--from: "2026-11-30 00:33" has no time zone`},
		{name: "site facts from flags", args: append([]string{"--access", plain, "--client-timeout", "2s", "--workers", "4"}, window...), code: exitIncomplete,
			check: func(t *testing.T, r reportJSON, md string) {
				// Without the clients' timeout no success counts as late;
				// with 2 s, the lab's slow 200s (2,819) do.
				if r.Impact.LateRequests == 0 {
					t.Error("--client-timeout 2s was not applied: no late request")
				}
			}},
		{name: "site facts from the config's site section", args: append([]string{"--access", plain, "--config", cfg}, window...), code: exitIncomplete,
			check: func(t *testing.T, r reportJSON, md string) {
				if r.Impact.LateRequests == 0 {
					t.Error("client_timeout_s of the config's site was not applied")
				}
				found := false
				for _, n := range r.DataQuality {
					found = found || strings.Contains(n.Message, `aftermath.yaml:5: unknown key "worker" in site, ignored (did you mean "workers"?)`)
				}
				if !found {
					t.Errorf("no did-you-mean warning for site.worker in %+v", r.DataQuality)
				}
			}},
	}
	// Each variant is its own run of analyze into its own directory: the
	// subtests overlap (seven analyses of the lab's log).
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			args := append([]string{"analyze", "--out", out, "--format", "md,json"}, tt.args...)
			code, msg := runCLI(args, tt.stdin)
			if code != tt.code {
				t.Fatalf("exit %d (%s), want %d", code, msg, tt.code)
			}
			if tt.msg != "" && !strings.Contains(msg, tt.msg) {
				t.Errorf("message %q, want it to say %q", msg, tt.msg)
			}
			if tt.code == exitUsage {
				if _, err := os.Stat(filepath.Join(out, "report.json")); err == nil {
					t.Error("a report was written for evidence that cannot be judged")
				}
				return
			}
			r, md := readReport(t, out)
			tt.check(t, r, md)
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A scheduled scan over a window the logs do not reach cannot judge it: exit
// 2, never "nothing anomalous".
func TestScanWithoutLinesCannotJudge(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(labDir); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the lab recording is needed in CI: %v", err)
		}
		t.Skipf("lab recording not available: %v", err)
	}
	out := t.TempDir()
	code, msg := runCLI([]string{"scan", "--bundle", labDir, "--now", "2026-11-30T15:47:00Z", "--since", "1h", "--out", out}, nil)
	if code != exitUsage || !strings.Contains(msg, "cannot judge: no access-log lines from 2026-11-30T14:47:00Z to 2026-11-30T15:47:00Z") {
		t.Errorf("exit %d %q, want 2 saying it cannot judge", code, msg)
	}
}
