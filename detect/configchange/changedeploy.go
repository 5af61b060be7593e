package configchange

import (
	"fmt"
	"strconv"
	"strings"
	"time"

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
func deployFinding(c sources.Change, q QueueFacts, present shown) (Finding, bool) {
	if c.File != "" || q.Onset.IsZero() || c.Time.After(q.Onset) || q.Onset.Sub(c.Time) > deployLead {
		return Finding{}, false
	}
	serviceTime := present.kinds[KindServiceTimeRegression]
	if present.trigger && !serviceTime {
		return Finding{}, false
	}
	lead := q.Onset.Sub(c.Time)
	var b strings.Builder
	fmt.Fprintf(&b, "Deploy %s (%s, %s, %s before the onset) changed no setting aftermath reads, and no traffic change explains the onset",
		DeployName(c), refText(c), changeWhen(c.Time, q.Onset, q.Loc), spanText(lead))
	if serviceTime {
		b.WriteString("; PHP's own service time rose at it (service_time_regression), which new code or a new dependency can do")
	}
	b.WriteString(": what it shipped is a candidate cause the logs cannot judge. Compare it with the release before, or roll it back.")
	return Finding{Kind: KindConfigChange, Role: RoleCandidate, Start: c.Time, End: c.Time, Confidence: 0.4,
		Summary: b.String(), Facts: &ConfigChangeFacts{HoursBeforeOnset: Some(round(lead.Hours(), 2)), Linked: true}, Change: changePtr(c)}, true
}

// DeployName names a deploy by its subject (the first line of its note):
// `"Release 4.2"`; without a note, by its reference.
func DeployName(c sources.Change) string {
	subject, _, _ := strings.Cut(strings.TrimSpace(c.Note), "\n")
	if subject = strings.TrimSpace(subject); subject != "" {
		return strconv.Quote(subject)
	}
	return refText(c)
}
