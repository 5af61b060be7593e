package detect

import (
	"testing"
	"time"
)

// A crawler's summary says a joined actor and a start the log cannot show
// in the words report.json has always held.
func TestCrawlerSummaryEnglish(t *testing.T) {
	at := time.Date(2026, 11, 30, 2, 16, 0, 0, time.UTC)
	said := crawlerSummary{
		Who:         crawlerWho{Fingerprints: 8, UserAgents: []string{"Chrome 126/125", "Firefox 127"}, Langs: []string{"en-us", ""}, LoggedIn: "no"},
		HasBaseline: false, Peak: 9605, PHPShare: 0.53, Start: at, Unseen: &Unseen{Gap: true, From: at.Add(-time.Hour), To: at},
		Spread: false, MaxPerIP: 12001, Paths: []string{"a", "b"}, AssetShare: 0.004, Others: 3, OtherRequests: 1200,
	}
	want := "8 fingerprints (Chrome 126/125, Firefox 127; Accept-Language en-us, none) / logged out requests reached 9,605 per 10 minutes (no baseline before the incident to compare with; 53% of PHP's time), already under way when the access log resumes at 02:16 after a gap (when it began is unknown), concentrated: one address sent 12,001 requests, so a per-client limit would catch it; they walked a, b and fetched 0% assets. 3 other addresses of the same fingerprint (1,200 requests) sent most of their requests outside the burst and are not counted in it."
	if got := Messages.Say("crawler_burst.summary", said).String(); got != want {
		t.Errorf("summary:\n got %s\nwant %s", got, want)
	}
}
