package analysis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/rules/replay"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

// defaultBaselineSpan is how far before the incident's window the zones are
// sized when the bundle names no baseline: rules clips it to the data.
const defaultBaselineSpan = 30 * 24 * time.Hour

// PrepareReplay proposes the rule for the range to replay (rules.Propose over
// exactly that range, so its backtest counts the requests the replay sends)
// and schedules the range's requests (replay.NewPlan). The crawler
// fingerprints come from d's findings over the whole window, so a replay of
// part of it still knows the crawler. The zones are sized on the bundle's
// baseline, or else on the data before the incident's window (never on the
// incident before the range). in is what d was detected from.
func (d *Detected) PrepareReplay(ctx context.Context, in evidence.Inputs, o replay.PlanOptions) (*replay.Plan, *rules.Proposal, error) {
	ev := d.Loaded
	if ev.Requests == nil {
		return nil, nil, errors.New("replay: the evidence was loaded without its requests (ingest.Inputs.KeepRequests)")
	}
	bFrom, bTo := ev.BaselineFrom, ev.BaselineTo
	if bFrom.IsZero() || !bTo.After(bFrom) {
		bFrom, bTo = ev.From.Add(-defaultBaselineSpan), ev.From
	}
	findings := d.Result.Findings
	prop, err := rules.Propose(ctx, rules.Input{Findings: findings, Access: in.Access, Requests: ev.Requests, Site: ev.Site, Zone: ev.LogZone,
		From: o.From, To: o.To, BaselineFrom: bFrom, BaselineTo: bTo})
	if err != nil {
		return nil, nil, fmt.Errorf("replay: proposing the rule for the range: %w", err)
	}
	o.Findings, o.Site = findings, ev.Site
	plan, err := replay.NewPlan(ctx, ev.Requests.Read, o)
	if err != nil {
		return nil, nil, err
	}
	return plan, prop, nil
}
