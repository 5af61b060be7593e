package configchange

import (
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
)

// cacheChangeLead is how long before a cache emptied a change may come and
// still be what emptied it: a release's post-deploy step runs within
// minutes of the commit.
const cacheChangeLead = 15 * time.Minute

// cacheChangeFinding links, by time alone, a change that set no setting
// aftermath reads (a script, a release) to a cache_collapse that began
// within cacheChangeLead after it: the cache emptied as it was deployed.
// The logs cannot say what it changed, so it is named as what enabled the
// collapse, with the minutes between them, and the verdict is the reader's
// to confirm in the change itself.
func cacheChangeFinding(c sources.Change, q QueueFacts, findings []detect.Finding) (detect.Finding, bool) {
	cc := detect.First(findings, detect.KindCacheCollapse)
	if cc == nil || c.Time.After(cc.Start) || cc.Start.Sub(c.Time) > cacheChangeLead {
		return detect.Finding{}, false
	}
	lead := cc.Start.Sub(c.Time)
	summary := detect.Messages.Say("config_change.cache", struct {
		Name, File, Kind string
		Ref, Lead        prose.Text
		At, Emptied      time.Time
	}{DeployName(c), c.File, string(detect.KindCacheCollapse), refText(c), spanSaid(lead), c.Time.In(q.Loc), cc.Start.In(q.Loc)})
	facts := &ConfigChangeFacts{Linked: true}
	if !q.Onset.IsZero() {
		facts.HoursBeforeOnset = detect.Some(detect.Round(q.Onset.Sub(c.Time).Hours(), 2))
	}
	return detect.Finding{Kind: detect.KindConfigChange, Role: detect.RoleEnabler, Start: c.Time, End: c.Time, Confidence: 0.6,
		Summary: summary.String(), SummaryText: summary, Facts: facts, Change: changePtr(c)}, true
}

// sameRefLinked reports whether a finding of fs is about c's commit or
// deploy already (the repository and the change log record it alike).
func sameRefLinked(fs []detect.Finding, c sources.Change) bool {
	for i := range fs {
		if d := fs[i].Change; d != nil && c.Ref != "" && d.Ref == c.Ref && d.File == c.File {
			return true
		}
	}
	return false
}
