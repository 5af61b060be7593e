package detect

import (
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
)

// A crawler's summary says a joined actor and a start the log cannot show
// in the words report.json has always held, and each reason its
// fingerprint's other addresses were set apart for, with its count. Its
// explanation, which the report's causes show, says the same reasons in the
// same words: it said the readers under the fingerprint but not these.
func TestCrawlerSummaryEnglish(t *testing.T) {
	at := time.Date(2026, 11, 30, 2, 16, 0, 0, time.UTC)
	apart := setApart{Others: 3, OtherRequests: 1200, Left: leftOut{Outside: 1, OffRoute: 1, Few: 1, PacePerMin: 80}}
	said := crawlerSummary{
		Who:         crawlerWho{Fingerprints: 8, UserAgents: []string{"Chrome 126/125", "Firefox 127"}, Langs: []string{"en-us", ""}, LoggedIn: "no"},
		HasBaseline: false, Peak: 9605, PHPShare: 0.53, Start: at, Unseen: &Unseen{Gap: true, From: at.Add(-time.Hour), To: at},
		Spread: false, MaxPerIP: 12001, Paths: []string{"a", "b"}, AssetShare: 0.004, SetApart: apart,
	}
	wantApart := " 3 other addresses of the same fingerprint (1,200 requests) are not counted in the burst: 1 sent most of its requests outside the burst, 1 sent a few requests to pages the burst hardly walked and 1 sent fewer requests in the whole window than the burst's median address sent a minute during it (80)."
	want := "8 fingerprints (Chrome 126/125, Firefox 127; Accept-Language en-us, none) / logged out requests reached 9,605 per 10 minutes (no baseline before the incident to compare with; 53% of PHP's time), already under way when the access log resumes at 02:16 after a gap (when it began is unknown), concentrated: one address sent 12,001 requests, so a per-client limit would catch it; they walked a, b and fetched 0% assets." + wantApart
	if got := Messages.Say("crawler_burst.summary", said).String(); got != want {
		t.Errorf("summary:\n got %s\nwant %s", got, want)
	}
	// Korean says the same reasons with the same counts, only the
	// reasons that apply.
	wantKO := " 같은 지문의 다른 주소 3개(요청 1,200건)는 이 급증에 세지 않았습니다. 요청 대부분을 이 급증 밖에서 보낸 주소가 1개, " +
		"이 급증이 거의 다니지 않은 페이지에 몇 건만 보낸 주소가 1개, 구간 전체에 보낸 요청이 이 급증의 중앙값 주소가 급증 중 1분에 보낸 요청(80건)보다 적은 주소가 1개입니다."
	wantKOFew := " 같은 지문의 다른 주소 2개(요청 1,200건)는 이 급증에 세지 않았습니다. 구간 전체에 보낸 요청이 이 급증의 중앙값 주소가 급증 중 1분에 보낸 요청(80건)보다 적은 주소가 2개입니다."
	for _, c := range []struct {
		apart setApart
		want  string
	}{{apart, wantKO}, {setApart{Others: 2, OtherRequests: 1200, Left: leftOut{Few: 2, PacePerMin: 80}}, wantKOFew}} {
		said.SetApart = c.apart
		got, err := Messages.Say("crawler_burst.summary", said).InPlain("ko")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(got, c.want) {
			t.Errorf("Korean summary of %+v does not end %q: %s", c.apart, c.want, got)
		}
	}
	// The explanation of a finding whose facts state the same addresses
	// ends with the same sentence, in either language; one read back from
	// a report.json written before the reasons were stated counts them
	// without a reason.
	facts := &CrawlerBurstFacts{
		PeakPer10m: 9605, DistinctIPs: 5, RequestsPerIPMax: 12001,
		FingerprintReaders: 2, FingerprintReaderRequests: 40,
		FingerprintOthers: Some(3), FingerprintOtherRequests: Some(1200),
		FingerprintOthersOutside: Some(1), FingerprintOthersOffRoute: Some(1), FingerprintOthersFew: Some(1), BurstPacePerMin: Some(80.0),
	}
	old := *facts
	old.FingerprintOthersOutside, old.FingerprintOthersOffRoute, old.FingerprintOthersFew, old.BurstPacePerMin = Maybe[int]{}, Maybe[int]{}, Maybe[int]{}, Maybe[float64]{}
	for _, c := range []struct {
		lang  plainPhraser
		facts *CrawlerBurstFacts
		want  string
	}{
		{prose.EN, facts, wantApart},
		{"ko", facts, wantKO},
		{prose.EN, &old, " as readers who share the crawler's fingerprint. 3 other addresses of the same fingerprint (1,200 requests) are not counted in the burst."},
		{"ko", &old, "따로 셌습니다. 같은 지문의 다른 주소 3개(요청 1,200건)는 이 급증에 세지 않았습니다."},
	} {
		f := &Finding{Kind: KindCrawlerBurst, Start: at, Facts: c.facts}
		if got := explainCrawler(c.lang, f, plainStory{}); !strings.HasSuffix(got, c.want) {
			t.Errorf("explanation (%s) does not end %q: %s", c.lang, c.want, got)
		}
	}
}

// The crawler check's reason joins its clauses with "; " whichever of them
// are said, in the words report.json has always held.
func TestCrawlerCheckedEnglish(t *testing.T) {
	key := sayKey(request.ClusterKey{UA: "Chrome 121", LoggedIn: sources.LoggedInNo, NoClientHints: true})
	said := crawlerChecked{
		Surges:   []crawlerSurge{{Key: key, Baseline: 10, Peak: 200, Why: Messages.Say("crawler_burst.human.cheap", 12.5)}},
		Minor:    []crawlerMinor{{key, 300, 100000}},
		Unjudged: []crawlerSurge{{Key: key, Baseline: 5, Peak: 50, Unmeasured: 0.6}},
		MinShare: 0.02, PHPShare: 0.1, MinSamples: 20, NoBaseline: true,
	}
	k := "Chrome 121 / no language / logged out / no client hints"
	want := "judged legitimate (a surge, not a crawler): " + k + " rose 10 -> 200 per 10 min but it read cheap or cached pages (12% went to expensive, uncacheable ones); " +
		"rose, but with under 2% of the window's requests once their readers are left out: " + k + " (300 requests of 100,000, readers apart); " +
		"could not judge: " + k + " rose 5 -> 50 per 10 min, but the cost of its pages could not be measured (60% of its page requests went to routes PHP answered fewer than 20 times in the data); " +
		"no baseline before the incident: fingerprints were judged by their share of PHP time (at least 10%), not by a rise"
	if got := Messages.Say("crawler_burst.checked", said).String(); got != want {
		t.Errorf("reason:\n got %s\nwant %s", got, want)
	}
	said = crawlerChecked{Minor: said.Minor, MinShare: 0.02}
	if got, want := Messages.Say("crawler_burst.checked", said).String(), "rose, but with under 2% of the window's requests once their readers are left out: "+k+" (300 requests of 100,000, readers apart)"; got != want {
		t.Errorf("reason:\n got %s\nwant %s", got, want)
	}
}
