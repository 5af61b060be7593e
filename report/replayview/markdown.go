package replayview

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/rules/replay/replayreport"
)

// Markdown renders the report for humans. Every value that came from a log
// line (the crawler fingerprints) is escaped.
func Markdown(r *replayreport.Report) []byte {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Replay of %s to %s at %s\n\n", r.Window.From.UTC().Format(time.RFC3339), r.Window.To.UTC().Format(time.RFC3339), report.MarkdownCell(r.Target))
	g := r.Generator
	if g.Valid {
		w("**Valid run**: the generator's worst scheduling lag was %.1f ms (bound %.0f ms).\n\n", g.WorstLagMS, g.MaxLagMS)
	} else {
		w("**INVALID RUN**: %s.\n\n", g.Invalid)
	}
	if r.Stopped != "" {
		w("**Stopped early** (%s): %d scheduled requests were never sent; requests in flight then are counted as stopped, not as the server's.\n\n", r.Stopped, r.Unsent)
	}
	w("- Open-loop: %d requests, each sent at its recorded arrival", r.Scheduled)
	if r.Speed != 1 {
		w(" compressed %gx (one replay second is %g incident seconds)", r.Speed, r.Speed)
	}
	w(", on its own goroutine, whatever was still in flight.\n")
	if r.Only != "" {
		w("- Only %s requests were sent (%d others left out).\n", r.Only, r.ExcludedByOnly)
	}
	w("- Clients: %s.\n", report.MarkdownCell(r.Addressing))
	w("- Client timeout %g s: an answer after it is late (it reached nobody); the replay watched %g s more for late answers.\n", r.ClientTimeoutS, r.LateWindowS)
	w("- Crawler fingerprint: %s.\n", report.MarkdownCell(strings.Join(r.CrawlerFingerprints, "; ")))
	if r.HealthChecksLeftOut > 0 {
		w("- %d requests for the health URI were left out: the staging proxy runs its own checks.\n", r.HealthChecksLeftOut)
	}
	if r.OverRequestLimit > 0 {
		w("- **Bounded**: %d requests beyond --max-requests were not scheduled.\n", r.OverRequestLimit)
	}
	w("\n")

	if c := r.Backtest; c != nil {
		w("## Backtest vs replay\n\n")
		if c.ScaledRuleFile != "" {
			w("The target must run `%s`: the rule (`%s`) with every window divided by %g, since a window does not compress with the traffic.\n\n", c.ScaledRuleFile, c.RuleFile, r.Speed)
		} else if c.RuleFile != "" {
			w("The target must run the rule in `%s`.\n\n", c.RuleFile)
		}
		w("| class | backtest refused | replay refused (429) | difference | replay failed (late, 5xx, transport) |\n|---|---:|---:|---:|---:|\n")
		for _, row := range c.Rows {
			w("| %s | %.1f%% (%d of %d) | %.1f%% (%d of %d) | %+.1f points | %.1f%% |\n", row.Class, 100*row.BacktestRefusedShare, row.BacktestRefused, row.BacktestRequests,
				100*row.ReplayRefusedShare, row.ReplayRefused, row.ReplayJudged, row.DifferencePoints, 100*row.ReplayFailedShare)
		}
		w("\n")
		if len(c.Disagreements) == 0 {
			w("The replay agrees with the backtest within %.0f points for every class.\n\n", replayreport.AgreementPoints)
		} else {
			w("Disagreements (more than %.0f points, or different counts):\n\n", replayreport.AgreementPoints)
			for _, d := range c.Disagreements {
				w("- %s\n", d)
			}
			w("\nIf the target did not run the scaled rule, a disagreement is expected; if it did, the backtest's model and the server differ here.\n\n")
		}
	} else {
		w("No rule was proposed for this range: nothing to set beside a backtest.\n\n")
	}

	w("## What came back\n\n")
	w("| class | sent | goodput (2xx in time) | other in time | 429 | 502/503/504 | late | timeout | refused | reset | EOF | other error | stopped |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, name := range []string{replayreport.ClassCrawler.String(), replayreport.ClassOtherLoggedOut.String(), replayreport.ClassLoggedIn.String(), "all"} {
		s := r.Classes[name]
		w("| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n", name, s.Sent, s.Goodput, otherInTime(s.Answered), s.RateLimited, s.ProxyErrors,
			s.LateTotal(), s.Timeout, s.Refused, s.Reset, s.EOF, s.OtherError, s.Stopped)
	}
	w("\nAnswered in time, by status: %s.\n\n", statusText(r.Classes["all"].Answered))

	w("## The generator\n\n")
	w("- Worst scheduling lag %.1f ms at %.1f s (bound %.0f ms); median %.1f ms, 99th percentile %.1f ms; %d requests later than the bound.\n",
		g.WorstLagMS, g.WorstLagAtS, g.MaxLagMS, g.MedianLagMS, g.P99LagMS, g.OverMaxLag)
	w("- In flight (clients still waiting) at most %d; the schedule allowed at most %d (its busiest client-timeout-long stretch). Connections open at most %d.\n",
		g.InFlightHigh, g.InFlightBound, g.OpenHigh)
	for _, k := range sortedKeys(g.ErrorSamples) {
		w("- First %s: %s\n", k, report.MarkdownCell(g.ErrorSamples[k]))
	}
	e := r.Environment
	w("- Environment: %s %s/%s, %d CPUs, GOMAXPROCS %d.\n\n", e.GoVersion, e.GOOS, e.GOARCH, e.NumCPU, e.GOMAXPROCS)

	w("## Per minute of replay time\n\n")
	w("| replay s | incident time | in flight | goodput | crawler 429 | others 429 | 5xx | late | timeout | transport errors |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range r.Minutes {
		var c429, o429, x5, late, to, tr int
		for name, s := range row.Classes {
			if name == replayreport.ClassCrawler.String() {
				c429 += s.RateLimited
			} else {
				o429 += s.RateLimited
			}
			x5 += s.ProxyErrors
			late += s.LateTotal()
			to += s.Timeout
			tr += s.Refused + s.Reset + s.EOF + s.OtherError
		}
		w("| %.0f | %s | %d | %d | %d | %d | %d | %d | %d | %d |\n", row.Start, row.IncidentTime.Format("15:04:05Z"), row.InFlightHigh, row.Goodput, c429, o429, x5, late, to, tr)
	}
	w("\nPer-second rows (and goodput per second) are in replay.json. Requests are counted in the second they were scheduled; goodput in the second it completed.\n")
	if len(r.Notes) > 0 {
		w("\n## Notes\n\n")
		for _, n := range r.Notes {
			w("- %s\n", report.MarkdownCell(n))
		}
	}
	return []byte(b.String())
}

// otherInTime counts the answers in time that the table's other columns do
// not: neither 2xx, 429 nor 502/503/504.
func otherInTime(m map[int]int) int {
	n := 0
	for st, c := range m {
		if (st < 200 || st >= 300) && st != 429 && st != 502 && st != 503 && st != 504 {
			n += c
		}
	}
	return n
}

func statusText(m map[int]int) string {
	if len(m) == 0 {
		return "none"
	}
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%d: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
