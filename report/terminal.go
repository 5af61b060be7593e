package report

import (
	"fmt"
	"io"
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
func NewTable(w io.Writer) *tablewriter.Table {
	return tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off))
}

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

// PrintSummary writes a few tables for the terminal: impact by status, the
// timeline, the causes, the rules, the top fingerprints and the data-quality
// notes, then the paths written (if any are given).
func PrintSummary(w io.Writer, r *Report, paths ...string) {
	p := newPrinter(LangEN, mustLocation(r), r.Impact.Start)
	for _, line := range coverageLines(p, r) {
		fmt.Fprintln(w, TerminalSafe(line))
	}
	fmt.Fprintf(w, "window %s to %s (%s): %s requests, %s failed (5xx, 429, late)",
		r.Window.From.Format("2006-01-02 15:04Z07:00"), r.Window.To.Format("2006-01-02 15:04Z07:00"), cell(r.Window.TZ),
		p.i(r.Impact.Requests), p.i(r.Impact.FailedRequests))
	if r.Impact.PHPRequests > 0 {
		fmt.Fprintf(w, "; from %s to %s, %s of %s PHP requests failed (%s)", p.stamp(r.Impact.Start), p.stamp(r.Impact.End),
			p.i(r.Impact.PHPFailed), p.i(r.Impact.PHPRequests), p.pct(r.Impact.PHPFailedShare))
	}
	fmt.Fprintln(w)

	statuses := make([]string, 0, len(r.Impact.StatusCounts))
	for s := range r.Impact.StatusCounts {
		statuses = append(statuses, s)
	}
	sort.Strings(statuses)
	if len(statuses) > 0 {
		t := NewTable(w)
		t.Header("status", "requests")
		for _, s := range statuses {
			_ = t.Append(cell(s), p.i(r.Impact.StatusCounts[s]))
		}
		_ = t.Render()
	}

	if len(r.Timeline) > 0 {
		t := NewTable(w)
		t.Header("time", "what happened", "finding")
		for _, m := range r.Timeline {
			_ = t.Append(p.stamp(m.Time), cell(m.Text), cell(m.Finding))
		}
		_ = t.Render()
	}

	if len(r.Causes) > 0 {
		t := NewTable(w)
		t.Header("rank", "role", "finding", "confidence")
		conf := map[string]float64{}
		for _, f := range r.Findings {
			conf[f.ID] = f.Confidence
		}
		for _, c := range r.Causes {
			_ = t.Append(strconv.Itoa(c.Rank), cell(string(c.Role)), cell(c.Finding), strconv.FormatFloat(conf[c.Finding], 'f', 2, 64))
		}
		_ = t.Render()
	}

	if len(r.Rules) > 0 {
		t := NewTable(w)
		t.Header("rule", "crawler refused", "other logged-out refused", "readers sharing the fingerprint refused", "logged-in refused", "baseline refused")
		for _, rl := range r.Rules {
			b := rl.Backtest
			_ = t.Append(cell(rl.Name),
				fmt.Sprintf("%s of %s (%s)", p.i(b.CrawlerRefused), p.i(b.CrawlerRequests), p.pct(b.CrawlerRefusedShare)),
				fmt.Sprintf("%s of %s (%s)", p.i(b.OtherLoggedOutRefused), p.i(b.OtherLoggedOutRequests), p.pct(b.OtherLoggedOutRefusedShare)),
				fmt.Sprintf("%s of %s", p.i(b.FingerprintReaderRefused), p.i(b.FingerprintReaderRequests)),
				fmt.Sprintf("%s of %s", p.i(b.LoggedInRefused), p.i(b.LoggedInRequests)),
				fmt.Sprintf("%s of %s", p.i(b.BaselineRefused), p.i(b.BaselineRequests)))
		}
		_ = t.Render()
	} else {
		fmt.Fprintln(w, "no rule was generated")
	}

	if len(r.Evidence.Clusters) > 0 {
		t := NewTable(w)
		t.Header("fingerprint", "requests", "addresses", "per address (median)")
		for i, c := range r.Evidence.Clusters {
			if i == 5 {
				break
			}
			_ = t.Append(cell(c.Fingerprint), p.i(c.Requests), p.i(c.DistinctIPs), p.n(c.RequestsPerIPMedian))
		}
		_ = t.Render()
	}
	for _, n := range r.DataQuality {
		fmt.Fprintf(w, "%s (%s): %s\n", cell(n.Severity), cell(n.Source), TerminalSafe(n.Message))
	}
	if len(paths) > 0 {
		fmt.Fprintln(w)
		for _, path := range paths {
			fmt.Fprintln(w, "wrote", TerminalSafe(path))
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
