package accesslog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/corpus")

// The corpus re-encodes the real lines of testdata/lab-sample.log the way
// Caddy (per its modules/logging/encoders.go and zap's encoders) and its hosts
// write them with other settings. Each file is generated here and kept in
// testdata/corpus as a golden file (-update rewrites them), so that a change
// of a generator shows in review.

var (
	tsRE       = regexp.MustCompile(`"ts":([0-9.]+)`)
	durRE      = regexp.MustCompile(`"duration":([0-9.]+)`)
	remoteRE   = regexp.MustCompile(`"remote_ip":"([^"]*)","remote_port":"([^"]*)","client_ip":"[^"]*",`)
	consoleRE  = regexp.MustCompile(`^\{"level":"([a-z]+)","ts":[0-9.]+,"logger":"([^"]+)","msg":"([^"]*)",`)
	sampleTime = func(line string) time.Time {
		var lp lineParser
		t, ok := lp.timeOfNumber([]byte(tsRE.FindStringSubmatch(line)[1]))
		if !ok {
			panic(line)
		}
		return t
	}
	sampleDur = func(line string) time.Duration {
		f, _ := strconv.ParseFloat(durRE.FindStringSubmatch(line)[1], 64)
		return time.Duration(math.Round(f * 1e9))
	}
)

// withTS replaces ts by what time_format writes for the line's time.
func withTS(format func(t time.Time) string) func(string) string {
	return func(line string) string {
		t := sampleTime(line)
		return tsRE.ReplaceAllLiteralString(line, `"ts":`+format(t))
	}
}

func quoted(layout string, loc *time.Location) func(time.Time) string {
	return func(t time.Time) string { return strconv.Quote(t.In(loc).Format(layout)) }
}

// withDur replaces duration by what duration_format writes (zap's
// Seconds/Millis/Nanos/StringDurationEncoder).
func withDur(format func(d time.Duration) string) func(string) string {
	return func(line string) string {
		return durRE.ReplaceAllLiteralString(line, `"duration":`+format(sampleDur(line)))
	}
}

// oldCaddy writes the client as the oldest Caddy 2 lines do: remote_addr only.
func oldCaddy(line string) string {
	return remoteRE.ReplaceAllString(line, `"remote_addr":"$1:$2",`)
}

func docker(line string) string { return dockerAt(line, sampleTime(line)) }

func dockerAt(line string, t time.Time) string {
	b, _ := json.Marshal(map[string]string{"log": line + "\n", "stream": "stdout", "time": t.Format(time.RFC3339Nano)})
	return string(b)
}

func journald(line string) string { return journaldAt(line, sampleTime(line)) }

func journaldAt(line string, t time.Time) string {
	b, _ := json.Marshal(map[string]string{
		"__CURSOR": "s=2f1c;i=" + strconv.FormatInt(t.UnixMicro()%99991, 16), "__REALTIME_TIMESTAMP": strconv.FormatInt(t.UnixMicro(), 10),
		"_SYSTEMD_UNIT": "caddy.service", "SYSLOG_IDENTIFIER": "caddy", "PRIORITY": "6", "MESSAGE": line})
	return string(b)
}

// console writes the line as Caddy's console encoder does: wall_milli time,
// coloured upper-case level, logger, message, then the other fields as JSON.
func console(withFields bool) func(string) string {
	return func(line string) string {
		m := consoleRE.FindStringSubmatch(line)
		t := sampleTime(line)
		s := t.UTC().Format("2006/01/02 15:04:05.000") + "\t\x1b[34m" + strings.ToUpper(m[1]) + "\x1b[0m\t" + m[2] + "\t" + m[3]
		if withFields {
			s += "\t{" + line[len(m[0]):]
		}
		return s
	}
}

// nginxCombined writes the request in nginx's default combined format.
func nginxCombined(line string) string {
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		panic(err)
	}
	r := m["request"].(map[string]any)
	ua := "-"
	if h, ok := r["headers"].(map[string]any)["User-Agent"].([]any); ok {
		ua = h[0].(string)
	}
	return fmt.Sprintf(`%s - - [%s] "%s %s %s" %v %v "-" %q`, r["client_ip"], sampleTime(line).Format("02/Jan/2006:15:04:05 -0700"),
		r["method"], r["uri"], r["proto"], m["status"], m["size"], ua)
}

type corpusCase struct {
	name   string
	encode func(string) string
	opts   Options
	// what the requests must hold, compared with the original lines': the
	// precision the format keeps of time and duration
	timePrec, durPrec time.Duration
	timeShift         time.Duration
	wrongDur          bool // durations are known to be misread: not compared
	// notes that must be among Stats.Notes, as substrings
	notes []string
	// unusable: the read must fail with an *UnusableError saying this
	unusable string
}

var seoul = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Seoul")
	if err != nil {
		panic(err)
	}
	return loc
}()

func corpusCases() []corpusCase {
	us, ms, s := time.Microsecond, time.Millisecond, time.Second
	return []corpusCase{
		{name: "caddy-default", encode: func(l string) string { return l }, timePrec: us, durPrec: time.Nanosecond},
		{name: "time-unix_milli_float", encode: withTS(func(t time.Time) string {
			return strconv.FormatFloat(float64(t.UnixNano())/1e6, 'f', -1, 64)
		}), timePrec: us, durPrec: time.Nanosecond},
		{name: "time-unix_nano", encode: withTS(func(t time.Time) string { return strconv.FormatInt(t.UnixNano(), 10) }), timePrec: us, durPrec: time.Nanosecond},
		{name: "time-iso8601", encode: withTS(quoted("2006-01-02T15:04:05.000Z0700", time.UTC)), timePrec: ms, durPrec: time.Nanosecond},
		{name: "time-iso8601-time_local", encode: withTS(quoted("2006-01-02T15:04:05.000Z0700", seoul)), timePrec: ms, durPrec: time.Nanosecond},
		{name: "time-rfc3339", encode: withTS(quoted(time.RFC3339, time.UTC)), timePrec: s, durPrec: time.Nanosecond},
		{name: "time-rfc3339_nano", encode: withTS(quoted(time.RFC3339Nano, time.UTC)), timePrec: us, durPrec: time.Nanosecond},
		{name: "time-common_log", encode: withTS(quoted("02/Jan/2006:15:04:05 -0700", seoul)), timePrec: s, durPrec: time.Nanosecond},
		{name: "time-wall", encode: withTS(quoted("2006/01/02 15:04:05", time.UTC)), timePrec: s, durPrec: time.Nanosecond,
			notes: []string{"27 times have no zone (Caddy's time_format wall, wall_milli or wall_nano): read as UTC"}},
		{name: "time-wall_milli", encode: withTS(quoted("2006/01/02 15:04:05.000", time.UTC)), timePrec: ms, durPrec: time.Nanosecond,
			notes: []string{"27 times have no zone"}},
		{name: "time-wall_nano-time_local", encode: withTS(quoted("2006/01/02 15:04:05.000000000", seoul)), opts: Options{Zone: seoul},
			timePrec: us, durPrec: time.Nanosecond, notes: []string{"read as Asia/Seoul (the zone given for times without one)"}},
		// The obvious answer is wrong: a wall time written in Seoul and read
		// without the zone is nine hours late, and the note says it was read as UTC.
		{name: "time-wall-time_local-no-zone-given", encode: withTS(quoted("2006/01/02 15:04:05", seoul)), timePrec: s, durPrec: time.Nanosecond,
			timeShift: 9 * time.Hour, notes: []string{"read as UTC, what Caddy writes unless the log sets time_local"}},
		{name: "duration-ms", encode: withDur(func(d time.Duration) string { return strconv.FormatInt(d.Nanoseconds()/1e6, 10) }),
			timePrec: us, durPrec: ms, notes: []string{"durations are whole numbers (0 to 10001 in the first 27 requests): read as milliseconds, Caddy's duration_format ms"}},
		{name: "duration-ns", encode: withDur(func(d time.Duration) string { return strconv.FormatInt(int64(d), 10) }),
			timePrec: us, durPrec: time.Nanosecond, notes: []string{"read as nanoseconds, Caddy's duration_format ns"}},
		{name: "duration-ms-given", encode: withDur(func(d time.Duration) string { return strconv.FormatInt(d.Nanoseconds()/1e6, 10) }),
			opts: Options{DurationFormat: "millis"}, timePrec: us, durPrec: ms,
			notes: []string{"whole-number durations read as milliseconds, the duration format given (millis), not detected"}},
		// A reload switched duration_format to ms after the first lines: the
		// first unit is kept (nothing tells the rest apart), and it is said.
		{name: "duration-s-then-ms", encode: func() func(string) string {
			n := 0
			return func(l string) string {
				if n++; n <= 20 {
					return l
				}
				return withDur(func(d time.Duration) string { return strconv.FormatInt(d.Nanoseconds()/1e6, 10) })(l)
			}
		}(), timePrec: us, durPrec: time.Nanosecond, wrongDur: true, notes: []string{"7 durations are whole numbers though the first lines' are fractions of a second"}},
		{name: "duration-string", encode: withDur(func(d time.Duration) string { return strconv.Quote(d.String()) }),
			timePrec: us, durPrec: time.Nanosecond, notes: []string{"durations are Go duration strings"}},
		{name: "remote_addr", encode: oldCaddy, timePrec: us, durPrec: time.Nanosecond,
			notes: []string{"27 lines name the client only by remote_addr"}},
		{name: "docker-json-file", encode: docker, timePrec: us, durPrec: time.Nanosecond,
			notes: []string{"27 Docker json-file lines: unwrapped"}},
		{name: "docker-json-file-duration-ns", encode: func(l string) string {
			return docker(withDur(func(d time.Duration) string { return strconv.FormatInt(int64(d), 10) })(l))
		}, timePrec: us, durPrec: time.Nanosecond, notes: []string{"27 Docker json-file lines", "read as nanoseconds"}},
		// The obvious answer is wrong again, but Docker's own clock shows it.
		{name: "docker-time-wall-time_local-no-zone-given", encode: func(l string) string {
			return dockerAt(withTS(quoted("2006/01/02 15:04:05.000", seoul))(l), sampleTime(l))
		}, timePrec: ms, durPrec: time.Nanosecond, timeShift: 9 * time.Hour, notes: []string{
			"27 Docker json-file lines", "27 times have no zone", "27 of those times are -9h0m0s off the times Docker or journald recorded"}},
		{name: "journald-wall-time_local", encode: func(l string) string {
			return journaldAt(withTS(quoted("2006/01/02 15:04:05.000", seoul))(l), sampleTime(l))
		}, opts: Options{Zone: seoul}, timePrec: ms, durPrec: time.Nanosecond, notes: []string{
			"27 journald export entries", "27 times have no zone (Caddy's time_format wall, wall_milli or wall_nano): read as Asia/Seoul"}},
		{name: "journald", encode: journald, timePrec: us, durPrec: time.Nanosecond,
			notes: []string{"27 journald export entries"}},
		{name: "console", encode: console(true), timePrec: ms, durPrec: time.Nanosecond,
			notes: []string{"27 lines of Caddy's console encoder", "27 times have no zone"}},
		{name: "docker-console", encode: func(l string) string { return dockerAt(console(true)(l), sampleTime(l)) }, timePrec: ms, durPrec: time.Nanosecond,
			notes: []string{"27 Docker json-file lines", "27 lines of Caddy's console encoder", "27 times have no zone"}},
		{name: "console-without-fields", encode: console(false),
			unusable: "t.log: no line could be read (first unusable line 1): Caddy console encoder lines without their JSON fields"},
		{name: "nginx-combined", encode: nginxCombined,
			unusable: "t.log: no line could be read (first unusable line 1): looks like nginx/Apache combined log format; aftermath reads Caddy's JSON access log (log { format json } in the site block)"},
		{name: "not-json", encode: func(l string) string {
			return sampleTime(l).Format(time.DateTime) + " GET " + strings.Split(strings.Split(l, `"uri":"`)[1], `"`)[0]
		}, unusable: "t.log: no line could be read (first unusable line 1): not JSON"},
		{name: "caddy-own-log", encode: func(l string) string {
			return strings.Replace(strings.Replace(l, "http.log.access.log0", "http.handlers.reverse_proxy.health_checker.active", 1), "handled request", "host is down", 1)
		}, unusable: `lines of Caddy's own log (logger "http.handlers.reverse_proxy.health_checker.active"), not its access log`},
		// Access-log lines, but every one without a time: said as such, not
		// taken for another log.
		{name: "access-lines-without-ts", encode: func(l string) string { return tsRE.ReplaceAllLiteralString(l, `"time":1`) },
			unusable: "t.log: no line could be read (first unusable line 1): Caddy access-log lines that cannot be used (missing ts)"},
	}
}

func sampleLines(t testing.TB) []string {
	return strings.Split(strings.TrimSuffix(string(readFile(t, sampleLog)), "\n"), "\n")
}

// corpusFile returns the variant's text, checked against (or, with -update,
// written to) its golden file.
func corpusFile(t *testing.T, name string, lines []string, encode func(string) string) string {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(encode(l))
		b.WriteByte('\n')
	}
	got := b.String()
	path := filepath.Join("testdata", "corpus", name+".log")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestCorpus -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from what the generator writes now (run go test -run TestCorpus -update and review the diff)", path)
	}
	return string(want)
}

// TestCorpus reads every variant and checks the requests against the original
// lines (to the precision the variant keeps), the notes, and the diagnosis of
// the variants that cannot be read.
func TestCorpus(t *testing.T) {
	lines := sampleLines(t)
	orig := readString(strings.Join(lines, "\n")+"\n", Options{LoggedInCookie: "wikiUserID="})
	if orig.err != nil || len(orig.reqs) != 27 {
		t.Fatalf("sample: %v, %d requests", orig.err, len(orig.reqs))
	}
	for _, tc := range corpusCases() {
		t.Run(tc.name, func(t *testing.T) {
			text := corpusFile(t, tc.name, lines, tc.encode)
			opts := tc.opts
			opts.LoggedInCookie = "wikiUserID="
			for _, workers := range []int{1, 3} {
				opts.Workers = workers
				res := readWith("t.log", strings.NewReader(text), opts, 8192)
				if tc.unusable != "" {
					var ue *UnusableError
					if !errors.As(res.err, &ue) || !strings.Contains(res.err.Error(), tc.unusable) {
						t.Fatalf("err = %v, want an UnusableError saying %q", res.err, tc.unusable)
					}
					if len(res.reqs) != 0 || res.stats.Inputs[0].Diagnosis == "" {
						t.Errorf("%d requests, input %+v", len(res.reqs), res.stats.Inputs[0])
					}
					continue
				}
				if res.err != nil || res.skips.Count("") != 0 {
					t.Fatalf("err %v, skips %v", res.err, notes(res.skips))
				}
				if len(res.reqs) != len(orig.reqs) {
					t.Fatalf("%d requests, want %d", len(res.reqs), len(orig.reqs))
				}
				for i, got := range res.reqs {
					want := orig.reqs[i]
					want.Time = want.Time.Truncate(tc.timePrec).Add(tc.timeShift)
					if tc.timePrec == time.Microsecond {
						want.Time = orig.reqs[i].Time.Add(tc.timeShift)
					}
					wantDur := time.Duration(math.Round(want.Duration * 1e9)).Truncate(tc.durPrec).Seconds()
					if math.Abs(got.Duration-wantDur) > 1e-9 && !tc.wrongDur {
						t.Errorf("line %d: duration %v, want %v", i+1, got.Duration, wantDur)
					}
					got.Duration, want.Duration = 0, 0
					if !got.Time.Equal(want.Time) {
						t.Errorf("line %d: time %v, want %v", i+1, got.Time, want.Time)
					}
					got.Time, want.Time = time.Time{}, time.Time{}
					if got != want {
						t.Errorf("line %d:\ngot  %+v\nwant %+v", i+1, got, want)
					}
				}
				checkNotes(t, res.stats.Notes, tc.notes)
			}
		})
	}
}

// checkNotes wants each of want in some note, and no note beyond those asked for.
func checkNotes(t *testing.T, got []sources.QualityNote, want []string) {
	t.Helper()
	used := make([]bool, len(got))
	for _, w := range want {
		found := false
		for i, n := range got {
			if strings.Contains(n.Message, w) {
				found, used[i] = true, true
			}
		}
		if !found {
			t.Errorf("no note says %q; notes: %v", w, got)
		}
	}
	for i, n := range got {
		if !used[i] {
			t.Errorf("unexpected note %+v", n)
		}
	}
}

// TestUnusableAmongUsable: an unusable input next to a usable one is a note
// with its diagnosis, not an error; a mostly unusable input is diagnosed too.
func TestUnusableAmongUsable(t *testing.T) {
	lines := sampleLines(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "access.log")
	ngx := filepath.Join(dir, "nginx.log")
	mostly := filepath.Join(dir, "mostly.log")
	var n, m bytes.Buffer
	for i, l := range lines {
		n.WriteString(nginxCombined(l) + "\n")
		if i == 5 {
			m.WriteString(l + "\n") // one Caddy line among nginx ones
		} else {
			m.WriteString(nginxCombined(l) + "\n")
		}
	}
	os.WriteFile(good, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	os.WriteFile(ngx, n.Bytes(), 0o644)
	os.WriteFile(mostly, m.Bytes(), 0o644)
	var skips sources.Skips
	st, err := Read(context.Background(), []string{ngx, good, mostly}, Options{}, &skips, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The Caddy line in mostly.log is also in access.log: counted once.
	if st.Requests != 27 || st.Duplicates != 1 || len(st.Inputs) != 3 {
		t.Fatalf("stats %+v", plainStats(st))
	}
	checkNotes(t, st.Notes, []string{
		ngx + ": no line could be read (first unusable line 1): looks like nginx/Apache combined log format",
		mostly + ": only 1 of 27 lines could be read (first unusable line 1): looks like nginx/Apache combined",
		mostly + ": all 1 of its requests were also in " + good,
	})
	for _, n := range st.Notes {
		if strings.Contains(n.Message, "could be read") && n.Severity != sources.SeverityError {
			t.Errorf("note %+v: an unusable input is an error", n)
		}
	}
}

// TestDockerPartialLines: Docker splits a line longer than 16 KiB into entries
// whose "log" lacks the final newline; the parts are not joined, and each is
// counted under its own reason.
func TestDockerPartialLines(t *testing.T) {
	lines := sampleLines(t)
	long := strings.Replace(lines[4], `"msg":"handled request"`, `"msg":"`+strings.Repeat("p", 17000)+`"`, 1)
	cut := 16 << 10
	part := func(s string, last bool) string {
		if last {
			s += "\n"
		}
		b, _ := json.Marshal(map[string]string{"log": s, "stream": "stderr", "time": "2026-11-29T15:34:10.1Z"})
		return string(b)
	}
	input := docker(lines[0]) + "\n" + part(long[:cut], false) + "\n" + part(long[cut:], true) + "\n" + docker(lines[1]) + "\n"
	res := readString(input, Options{})
	if res.err != nil || len(res.reqs) != 2 {
		t.Fatalf("err %v, %d requests", res.err, len(res.reqs))
	}
	got := notes(res.skips)
	if !strings.Contains(got[ReasonDockerPartial], "(first at t.log:2)") || !strings.Contains(got[ReasonMalformedJSON], "(first at t.log:3)") || len(got) != 2 {
		t.Errorf("skips %v", got)
	}
}
