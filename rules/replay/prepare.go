package replay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources/ingest"
)

// Analysis is what the pipeline produced for the incident: the evidence
// loaded (with its requests kept) and the detectors' findings over the
// incident's window. The crawler fingerprints come from those findings, so
// a replay of part of the window still knows the crawler.
type Analysis struct {
	Loaded   *ingest.Loaded
	Findings []detect.Finding
	// Access lists the access logs the evidence came from.
	Access []string
}

// defaultBaselineSpan is how far before the incident's window the zones are
// sized when the bundle names no baseline: rules clips it to the data.
const defaultBaselineSpan = 30 * 24 * time.Hour

// Prepare proposes the rule for the range to replay (rules.Propose over
// exactly that range, so its backtest counts the requests the replay sends)
// and schedules the range's requests. The zones are sized on the bundle's
// baseline, or else on the data before the incident's window (never on the
// incident before the range).
func Prepare(ctx context.Context, a Analysis, o PlanOptions) (*Plan, *rules.Proposal, error) {
	ev := a.Loaded
	if ev.Requests == nil {
		return nil, nil, errors.New("replay: the evidence was loaded without its requests (ingest.Inputs.KeepRequests)")
	}
	bFrom, bTo := ev.BaselineFrom, ev.BaselineTo
	if bFrom.IsZero() || !bTo.After(bFrom) {
		bFrom, bTo = ev.From.Add(-defaultBaselineSpan), ev.From
	}
	prop, err := rules.Propose(ctx, rules.Input{Findings: a.Findings, Access: a.Access, Requests: a.Loaded.Requests, Site: ev.Site, Zone: a.Loaded.LogZone,
		From: o.From, To: o.To, BaselineFrom: bFrom, BaselineTo: bTo})
	if err != nil {
		return nil, nil, fmt.Errorf("replay: proposing the rule for the range: %w", err)
	}
	o.Findings, o.Site = a.Findings, ev.Site
	plan, err := NewPlan(ctx, a.Loaded.Requests.Read, o)
	if err != nil {
		return nil, nil, err
	}
	return plan, prop, nil
}
