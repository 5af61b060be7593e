package report

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode"

	"github.com/olekukonko/tablewriter"
)

// terminalSafe drops control characters so that a log value cannot move the
// cursor, change colours or rewrite the terminal title.
func terminalSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}

// PrintSummary writes a few tables for the terminal: impact by status, the top
// fingerprints and the data-quality notes.
func PrintSummary(w io.Writer, r *Report) {
	fmt.Fprintf(w, "window %s to %s (%s): %s requests, %s failed (5xx)\n",
		r.Window.From.Format("2006-01-02 15:04Z07:00"), r.Window.To.Format("2006-01-02 15:04Z07:00"), r.Window.TZ,
		formatInt(r.Impact.Requests), formatInt(r.Impact.FailedRequests))

	statuses := make([]string, 0, len(r.Impact.StatusCounts))
	for s := range r.Impact.StatusCounts {
		statuses = append(statuses, s)
	}
	sort.Strings(statuses)
	t := tablewriter.NewWriter(w)
	t.Header("status", "requests")
	for _, s := range statuses {
		_ = t.Append(s, formatInt(r.Impact.StatusCounts[s]))
	}
	_ = t.Render()

	if len(r.Evidence.Clusters) > 0 {
		t = tablewriter.NewWriter(w)
		t.Header("fingerprint", "requests", "distinct IPs", "per IP (median)")
		for i, c := range r.Evidence.Clusters {
			if i == 5 {
				break
			}
			_ = t.Append(terminalSafe(c.Fingerprint), formatInt(c.Requests), formatInt(c.DistinctIPs), fmt.Sprint(c.RequestsPerIPMedian))
		}
		_ = t.Render()
	}
	for _, n := range r.DataQuality {
		fmt.Fprintf(w, "%s (%s): %s\n", n.Severity, n.Source, terminalSafe(n.Message))
	}
}
