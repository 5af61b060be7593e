package detect

import (
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

// Only the unread minutes inside a failing stretch count: a failed pull of
// the baseline's sample or of a margin outside every stretch leaves the
// cause judged, and a detector that judges from counts or metrics is never
// touched; one that reads lines and found nothing there could not judge.
func TestUnreadStretchIsTheFailingStretchesUnreadMinutes(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 10, 3, h, m, 0, 0, time.UTC) }
	incs := &Incidents{List: []Incident{{Start: at(14, 0), End: at(14, 10)}, {Start: at(15, 0), End: at(15, 20)}}}
	outside := &Evidence{PullFailed: []bundle.Window{{From: at(12, 40), To: at(13, 59)}, {From: at(14, 10), To: at(14, 50)}}}
	if u := outside.unreadStretch(incs); u != nil {
		t.Errorf("failed pulls outside every failing stretch, yet unread %+v", u)
	}
	ev := &Evidence{PullFailed: []bundle.Window{{From: at(13, 50), To: at(14, 5)}, {From: at(15, 15), To: at(15, 40)}}}
	u := ev.unreadStretch(incs)
	if u == nil || u.Minutes != 10 || u.StretchMinutes != 30 || !u.From.Equal(at(14, 0)) || !u.To.Equal(at(15, 20)) {
		t.Fatalf("unread %+v: want 10 of 30 minutes, 14:00 to 15:20", u)
	}
	counts := Check{Name: KindUpstreamErrors, Outcome: OutcomeNotInteresting}
	u.judge(KindUpstreamErrors, nil, &counts)
	if counts.Outcome != OutcomeNotInteresting {
		t.Errorf("upstream_errors judges from counts, yet %+v", counts)
	}
	lines := Check{Name: KindCrawlerBurst}
	u.judge(KindCrawlerBurst, nil, &lines)
	if lines.Outcome != OutcomeCouldNotRun || lines.Name != KindCrawlerBurst || u.note() == nil {
		t.Errorf("crawler_burst found nothing in unread minutes, yet %+v (note %v)", lines, u.note())
	}
}
