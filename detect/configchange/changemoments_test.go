package configchange

import (
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
)

// changeStory is a Story of findings and changes alone.
type changeStory struct {
	findings []detect.Finding
	changes  []sources.Change
	from, to time.Time
}

func (s changeStory) Findings() []detect.Finding        { return s.findings }
func (s changeStory) Window() (time.Time, time.Time)    { return s.from, s.to }
func (s changeStory) Changes() []sources.Change         { return s.changes }
func (s changeStory) QueueSeries() []detect.SeriesPoint { return nil }
func (s changeStory) Minutes() []detect.MinuteFailures  { return nil }
func (s changeStory) Coverage() []sources.Coverage      { return nil }

// TestChangeMomentsLinkTheirOwnFinding: a cause's moments name the deploys
// that followed it, but a deploy judged in a finding of its own (the 07:07
// backlog cap, a mitigation) is that finding's moment. The obvious way, the
// cause telling every later deploy, linked the 07:07 rows to the PHP version
// change (config_change-1) in crawler-backlog's timeline.
func TestChangeMomentsLinkTheirOwnFinding(t *testing.T) {
	t0 := time.Date(2026, 10, 2, 14, 48, 0, 0, time.UTC)
	php := sources.Change{Time: t0, Key: "php_version", Old: "8.2", New: "8.3", Ref: "297178f"}
	capped := sources.Change{Time: t0.Add(7*time.Hour + 19*time.Minute), Key: "listen.backlog", Old: "4096", New: "64", Ref: "bdb164e"}
	other := sources.Change{Time: capped.Time, Key: "pm.max_children", Old: "16", New: "24", Ref: "bdb164e"}
	fs := []detect.Finding{
		{ID: "config_change-1", Kind: detect.KindConfigChange, Role: detect.RoleCandidate, Change: &php},
		{ID: "config_change-2", Kind: detect.KindConfigChange, Role: detect.RoleMitigation, Change: &capped},
	}
	s := changeStory{findings: fs, changes: []sources.Change{php, capped, other}, from: t0.Add(-time.Hour), to: t0.Add(5 * time.Hour)}
	byFinding := map[string][]string{}
	for i := range fs {
		for _, m := range changeMoments(&fs[i], s) {
			byFinding[fs[i].ID] = append(byFinding[fs[i].ID], m.Topic)
		}
	}
	if got := byFinding["config_change-2"]; len(got) != 1 || got[0] != "change:listen.backlog" {
		t.Errorf("the backlog cap's own finding tells %v, want its change", got)
	}
	for _, topic := range byFinding["config_change-1"] {
		if topic == "change:listen.backlog" {
			t.Errorf("the PHP version change also tells the backlog cap: %v", byFinding["config_change-1"])
		}
	}
	// A later deploy no finding judged is still told, by the cause.
	if got := byFinding["config_change-1"]; len(got) != 2 || got[1] != "change:pm.max_children" {
		t.Errorf("the PHP version change tells %v, want itself and the unjudged pm.max_children change", got)
	}
}
