package report

import (
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
)

// TestConsequenceMoment: a client that rose after clients began to be failed
// is said to be a consequence in the timeline, in both languages; one that
// rose before is not.
func TestConsequenceMoment(t *testing.T) {
	start := time.Date(2026, 10, 19, 3, 20, 0, 0, time.UTC)
	for _, tt := range []struct {
		lang, want string
	}{{"en", "a consequence of the outage, not its cause"}, {"ko", "원인이 아니라 결과"}} {
		for _, after := range []bool{true, false} {
			facts := &detect.CrawlerBurstFacts{DistinctIPs: 311, PeakPer10m: 900}
			if after {
				facts.ConsequenceAfterS = detect.Some(360.0)
			}
			f := detect.Finding{Kind: detect.KindCrawlerBurst, Role: detect.RoleContext, Start: start, Facts: facts,
				Fingerprint: &detect.Fingerprint{UserAgent: "Chrome 142", AcceptLanguage: "ja", LoggedIn: sources.LoggedInNo.String()}}
			p := phraser{newPrinter(tt.lang, time.UTC, start), nil}
			spec, _ := detect.SpecOf(detect.KindCrawlerBurst)
			r := &Report{Window: Window{From: start.Add(-time.Hour), To: start.Add(time.Hour)}}
			text := spec.Moments(&f, story{r})[0].Text(p)
			if got := strings.Contains(text, tt.want); got != after {
				t.Errorf("%s, rose after the failures %v: %q", tt.lang, after, text)
			}
		}
	}
}
