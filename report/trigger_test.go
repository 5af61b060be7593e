package report

import (
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect"
)

// A crawler judged context (it did 0.2% of the PHP time added at the onset)
// is not ranked as a cause and the summary does not say it took the workers;
// it says why it is not the trigger. The same crawler as the trigger with most
// of the added PHP time keeps the reference sentence.
func TestSummaryContextCrawlerTookNoWorkers(t *testing.T) {
	r := referenceReport(t)
	c := firstKind(r.Findings, detect.KindCrawlerBurst)
	c.Role = detect.RoleContext
	cf := detect.FactsOf[detect.CrawlerBurstFacts](c)
	cf.OnsetLeadS = detect.Some(25 * 60.0)
	cf.PHPAddedShare = detect.Some(0.002)
	if err := r.Assemble(); err != nil {
		t.Fatal(err)
	}
	for _, cause := range r.Causes {
		if cause.Finding == c.ID {
			t.Errorf("context crawler ranked as cause %d (%s)", cause.Rank, cause.Role)
		}
	}
	s := summary(newPrinter(LangEN, mustZone("Asia/Seoul"), r.Impact.Start), r)
	if strings.Contains(s, "took every one") || !strings.Contains(s, "did not trigger the incident: it did 0.2% of the PHP time added at the onset") {
		t.Errorf("summary blames the context crawler or does not say why it is context: %q", s)
	}
	c.Role = detect.RoleTrigger
	cf.PHPAddedShare = detect.Some(0.9)
	if err := r.Assemble(); err != nil {
		t.Fatal(err)
	}
	if s := summary(newPrinter(LangEN, mustZone("Asia/Seoul"), r.Impact.Start), r); !strings.Contains(s, "took every one of the") {
		t.Errorf("the trigger crawler with 90%% of the added PHP time: %q", s)
	}
	cf.PHPAddedShare = detect.Some(0.3)
	if s := summary(newPrinter(LangEN, mustZone("Asia/Seoul"), r.Impact.Start), r); strings.Contains(s, "took every one") || !strings.Contains(s, "used 30% of the PHP time added at the onset") {
		t.Errorf("a trigger with 30%% of the added PHP time did not take every worker: %q", s)
	}
}
