package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestBacktestSaysWhichGoalItMisses: the reference rule refuses 87.3% of
// its crawler and 0.99% of the other logged-out requests, which the rules
// package marks as missing both goals (95% of the crawler, under 0.5% of
// the others). The rule's backtest table in postmortem.md (en, ko) and
// report.html, and the terminal summary, says so beside each share; unmarked, it does not (the numbers
// alone do not tell a reader what the rule aimed at).
func TestBacktestSaysWhichGoalItMisses(t *testing.T) {
	for _, marked := range []bool{false, true} {
		r := referenceReport(t)
		bt := &r.Rules[0].Backtest
		if marked {
			bt.CrawlerGoalMissed, bt.CrawlerGoal = true, 0.95
			bt.OtherLoggedOutGoalMissed, bt.OtherLoggedOutGoal = true, 0.005
		}
		for _, c := range []struct {
			lang, format   string
			crawler, other string
		}{
			{LangEN, "md", "| 11,960 of 13,695 (87%), under the 95% goal |", "| 212 of 21,350 (1%), not under the 0.5% goal |"},
			{LangKO, "md", "| 13,695건 중 11,960건 (87%), 목표 95%에 못 미침 |", "| 21,350건 중 212건 (1%), 목표 0.5% 미만을 넘음 |"},
			{LangEN, "html", "11,960 of 13,695 (87%), under the 95% goal</td>", "212 of 21,350 (1%), not under the 0.5% goal</td>"},
			{LangEN, "terminal", "11,960 of 13,695 (87%), under the 95% goal", "212 of 21,350 (1%), not under the 0.5% goal"},
		} {
			render := renderPostmortem
			switch c.format {
			case "html":
				render = renderHTML
			case "terminal":
				render = func(r *Report, lang string) ([]byte, error) {
					var buf bytes.Buffer
					PrintSummary(&buf, r, lang, "postmortem.md")
					return buf.Bytes(), nil
				}
			}
			out, err := render(r, c.lang)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{c.crawler, c.other} {
				if strings.Contains(string(out), want) != marked {
					t.Errorf("%s %s, goals marked missed %v: contains %q is %v", c.lang, c.format, marked, want, !marked)
				}
			}
		}
	}
}
