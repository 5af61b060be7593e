package report

import (
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// NewTable is a terminal table whose headers read as written: tablewriter
// upper-cases headers and turns punctuation into blanks by default, which
// garbles them ("logged-out" became "LOGGED - OUT", "PHP s saved" "PHP S SAVED").
// opts come after that setting.
func NewTable(w io.Writer, opts ...tablewriter.Option) *tablewriter.Table {
	return tablewriter.NewTable(w, append([]tablewriter.Option{tablewriter.WithHeaderAutoFormat(tw.Off)}, opts...)...)
}

// tables gives the tables of one summary, one after another, from one
// tablewriter.Table reset between them: each new Table allocates a cache of
// ten thousand entries for the stringer, which the summary does not use
// (its cells are strings), and making five of them was 0.4% of the CPU of
// the 256 MB analysis (perf), fresh memory touched once. The stringer
// cache of the one Table is a noCache, which Reset keeps, as it would not
// keep a nil one.
type tables struct {
	w io.Writer
	t *tablewriter.Table
}

// next is a table with nothing in it, the previous one rendered.
func (ts *tables) next() *tablewriter.Table {
	if ts.t == nil {
		ts.t = NewTable(ts.w, tablewriter.WithStringerCacheCustom(noCache{}))
	} else {
		ts.t.Reset()
	}
	return ts.t
}

// noCache caches nothing.
type noCache struct{}

func (noCache) Add(reflect.Type, reflect.Value) bool        { return false }
func (noCache) Get(reflect.Type) (v reflect.Value, ok bool) { return v, false }
func (noCache) Purge()                                      {}

// TerminalSafe drops control and format characters so that a log value cannot
// move the cursor, change colours, rewrite the terminal title (ESC sequences)
// or reorder what is shown (bidi overrides).
func TerminalSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
}

// maxCell bounds a terminal cell: the full text is in the files.
const maxCell = 90

func cell(s string) string {
	s = TerminalSafe(s)
	if rs := []rune(s); len(rs) > maxCell {
		s = string(rs[:maxCell-1]) + "…"
	}
	return s
}

// PrintSummary writes a few tables for the terminal in lang (en or ko; an
// unknown one reads as English): impact by status, the timeline, the causes,
// the rules, the top fingerprints and the data-quality notes, then the paths
// written (if any are given).
func PrintSummary(w io.Writer, r *Report, lang string, paths ...string) {
	if !validLang(lang) {
		lang = LangEN
	}
	p := newPrinter(lang, mustLocation(r), r.Impact.Start)
	words := wordTable(p, p.say("terminal.words", nil))
	ts := tables{w: w}
	for _, line := range coverageLines(p, r) {
		fmt.Fprintln(w, TerminalSafe(line))
	}
	fmt.Fprint(w, p.say("terminal.window", struct {
		From, To, TZ     string
		Requests, Failed int
	}{r.Window.From.Format("2006-01-02 15:04Z07:00"), r.Window.To.Format("2006-01-02 15:04Z07:00"), cell(r.Window.TZ),
		r.Impact.Requests, r.Impact.FailedRequests}))
	if r.Impact.PHPRequests > 0 {
		fmt.Fprint(w, p.say("terminal.php_failed", r.Impact))
	}
	fmt.Fprintln(w)

	statuses := make([]string, 0, len(r.Impact.StatusCounts))
	for s := range r.Impact.StatusCounts {
		statuses = append(statuses, s)
	}
	sort.Strings(statuses)
	if len(statuses) > 0 {
		t := ts.next()
		t.Header(words["status"], words["requests"])
		for _, s := range statuses {
			_ = t.Append(cell(s), p.i(r.Impact.StatusCounts[s]))
		}
		_ = t.Render()
	}

	if len(r.Timeline) > 0 {
		t := ts.next()
		t.Header(words["time"], words["what"], words["finding"])
		for _, m := range r.Timeline {
			_ = t.Append(p.stamp(m.Time), cell(m.text(lang)), cell(m.Finding))
		}
		_ = t.Render()
	}

	if len(r.Causes) > 0 {
		t := ts.next()
		t.Header(words["rank"], words["role"], words["finding"], words["confidence"])
		conf := map[string]float64{}
		for _, f := range r.Findings {
			conf[f.ID] = f.Confidence
		}
		for _, c := range r.Causes {
			role := string(c.Role)
			if word, ok := words["role_"+role]; ok {
				role = word
			}
			_ = t.Append(strconv.Itoa(c.Rank), cell(role), cell(c.Finding), strconv.FormatFloat(conf[c.Finding], 'f', 2, 64))
		}
		_ = t.Render()
	}

	if len(r.Rules) > 0 {
		of := func(n, total int) string { return p.say("backtest.of", struct{ N, Total int }{n, total}) }
		t := ts.next()
		t.Header(words["rule"], words["crawler_refused"], words["other_refused"], words["readers_refused"], words["logged_in_refused"], words["baseline_refused"])
		for _, rl := range r.Rules {
			b := rl.Backtest
			crawler, others := backtestShares(p, b)
			_ = t.Append(cell(rl.Name), crawler, others,
				of(b.FingerprintReaderRefused, b.FingerprintReaderRequests),
				of(b.LoggedInRefused, b.LoggedInRequests),
				of(b.BaselineRefused, b.BaselineRequests))
		}
		_ = t.Render()
	} else {
		fmt.Fprintln(w, p.say("terminal.no_rule", nil))
	}

	if len(r.Evidence.Clusters) > 0 {
		t := ts.next()
		t.Header(words["fingerprint"], words["requests"], words["addresses"], words["clients"], words["per_address"])
		for i, c := range r.Evidence.Clusters {
			if i == 5 {
				break
			}
			_ = t.Append(cell(p.text(c.FingerprintText, c.Fingerprint)), p.i(c.Requests), p.i(c.DistinctIPs), p.i(c.Clients), p.n(c.RequestsPerIPMedian))
		}
		_ = t.Render()
	}
	for _, n := range r.DataQuality {
		fmt.Fprintf(w, "%s (%s): %s\n", cell(severityWord(words, n.Severity)), cell(n.Source), TerminalSafe(p.text(n.Text, n.Message)))
	}
	if len(paths) > 0 {
		fmt.Fprintln(w)
		for _, path := range paths {
			fmt.Fprintln(w, p.say("terminal.wrote", TerminalSafe(path)))
		}
	}
}

// mustLocation is the report's zone, or UTC when it cannot be loaded (the
// terminal summary must print whatever happens).
func mustLocation(r *Report) *time.Location {
	loc, err := r.location()
	if err != nil {
		return time.UTC
	}
	return loc
}

// IncompleteLine is the last line analyze prints when the evidence was
// incomplete, in lang: where to read what was missing.
func IncompleteLine(lang, dataQuality string) string {
	if !validLang(lang) {
		lang = LangEN
	}
	return newPrinter(lang, time.UTC, time.Time{}).say("terminal.incomplete", dataQuality)
}
