package report

import (
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
)

// A crawler judged context (it did 0.2% of the PHP time added at the onset)
// is not ranked as a cause and the summary does not say it took the workers;
// it says why it is not the trigger. The same crawler as the trigger with most
// of the added PHP time keeps the reference sentence.
func TestSummaryContextCrawlerTookNoWorkers(t *testing.T) {
	r := referenceReport(t)
	c := detect.First(r.Findings, detect.KindCrawlerBurst)
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

// A crawler that was context, not a cause, gets no rule on purpose: the
// report says so instead of warning that "the crawler can come back".
func TestNoRuleForAContextCrawler(t *testing.T) {
	r := referenceReport(t)
	r.Rules = nil
	c := detect.First(r.Findings, detect.KindCrawlerBurst)
	if c == nil {
		t.Fatal("the reference report has no crawler_burst finding")
	}
	day := r.Window.From
	want := func(role detect.Role, en, ko string) {
		t.Helper()
		c.Role = role
		got := map[string]string{LangEN: en, LangKO: ko}
		for _, lang := range Langs {
			s := strings.Join(remains(newPrinter(lang, mustZone("Asia/Seoul"), day), r), "\n")
			if !strings.Contains(s, got[lang]) {
				t.Errorf("%s, role %s: %q does not say %q", lang, role, s, got[lang])
			}
		}
	}
	want(detect.RoleTrigger, "the crawler can come back the same way", "같은 크롤러가 같은 방식으로 다시 올 수 있습니다")
	want(detect.RoleContext, "as context, not a cause of this incident", "원인이 아닌 배경이어서 규칙을 만들지 않았습니다")
	if s := strings.Join(remains(newPrinter(LangEN, mustZone("Asia/Seoul"), day), r), "\n"); strings.Contains(s, "come back") {
		t.Errorf("a context crawler is said to come back: %q", s)
	}
}

// A deploy that changed no known setting is named by its subject, in the
// timeline's words and in its explanation, never as "configuration changed"
// or a setting "changed from - to -".
func TestDeployNamedBySubject(t *testing.T) {
	r := referenceReport(t)
	c := sources.Change{Time: at("02:01"), Source: "changes.yaml", Ref: "deploy-118", Note: "Release 4.2: new search backend\n\nSwitches search."}
	f := &detect.Finding{ID: "config_change-9", Kind: detect.KindConfigChange, Role: detect.RoleCandidate, Start: c.Time, End: c.Time, Change: &c,
		Summary: `Deploy "Release 4.2: new search backend" (deploy-118, 02:01, 25 min before the onset) changed no setting aftermath reads`}
	for _, lang := range Langs {
		p := newPrinter(lang, mustZone("Asia/Seoul"), r.Window.From)
		text, why := changeText(p, c), explain(p, r, f)
		for _, s := range []string{text, why} {
			if !strings.Contains(s, `"Release 4.2: new search backend"`) || strings.Contains(s, "changed from") || strings.Contains(s, "configuration changed") || strings.Contains(s, "설정 변경") {
				t.Errorf("%s: %q does not name the deploy by its subject", lang, s)
			}
		}
		if want := map[string]string{LangEN: "deploy", LangKO: "배포"}[lang]; !strings.HasPrefix(text, want) {
			t.Errorf("%s: %q", lang, text)
		}
	}
}
