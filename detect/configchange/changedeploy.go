package configchange

import (
	"strconv"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
)

// deployLead is how long before the onset a deploy that changed no setting
// aftermath knows is still named: the hour within which a changed setting
// may be the onset's trigger (assessment.finding).
const deployLead = time.Hour

// deployFinding names a deploy that changed no setting aftermath reads (a
// deploy log entry with neither key nor file: new code, new dependencies)
// when it came within deployLead before the onset and no traffic change
// explains the onset: no trigger was found, or the trigger is PHP's own
// service time, which new code can raise. It is what changed, so it is
// said, as a candidate: the logs cannot tell what it shipped. It is named
// by its subject (DeployName), never as a setting.
func deployFinding(c sources.Change, q QueueFacts, present shown) (detect.Finding, bool) {
	if c.File != "" || q.Onset.IsZero() || c.Time.After(q.Onset) || q.Onset.Sub(c.Time) > deployLead {
		return detect.Finding{}, false
	}
	serviceTime := present.kinds[detect.KindServiceTimeRegression]
	if present.trigger && !serviceTime {
		return detect.Finding{}, false
	}
	lead := q.Onset.Sub(c.Time)
	summary := detect.Messages.Say("config_change.deploy", struct {
		Name            string
		Ref, When, Lead prose.Text
		ServiceTime     bool
	}{DeployName(c), refText(c), detect.ChangeWhen(c.Time, q.Onset, q.Loc), spanSaid(lead), serviceTime})
	return detect.Finding{Kind: detect.KindConfigChange, Role: detect.RoleCandidate, Start: c.Time, End: c.Time, Confidence: 0.4,
		Summary: summary.String(), SummaryText: summary, Facts: &ConfigChangeFacts{HoursBeforeOnset: detect.Some(detect.Round(lead.Hours(), 2)), Linked: true}, Change: changePtr(c)}, true
}

// DeployName names a deploy by its subject (the first line of its note):
// `"Release 4.2"`; without a note, by its reference.
func DeployName(c sources.Change) string {
	subject, _, _ := strings.Cut(strings.TrimSpace(c.Note), "\n")
	if subject = strings.TrimSpace(subject); subject != "" {
		return strconv.Quote(subject)
	}
	return refText(c).String()
}
