package analysis

import (
	"context"
	"fmt"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/scan"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

// LoadScans reads the evidence of in for scans at nows (scan.Load): the
// metrics, logs and changes through Load, the access logs by the scan's own
// collector.
func LoadScans(ctx context.Context, in evidence.Inputs, cfg scan.Config, nows ...time.Time) (*scan.Set, error) {
	return scan.Load(ctx, in, cfg, Load, nows...)
}

// Scan runs the scan of set at now, one of the times it was loaded for: the
// scan readies the window (scan.Set.Window), every detector runs on it, each
// guarded so that a panic costs its own finding and not the scheduled scan
// (Window.Guard), and the scan judges the window against its baseline with
// what they found (scan.Set.Judge).
func Scan(ctx context.Context, set *scan.Set, now time.Time) (*scan.Result, error) {
	w, err := set.Window(now)
	if err != nil {
		return nil, err
	}
	res, err := runDetectors(ctx, w.Evidence, w.Guard(detect.Detectors()))
	if err != nil {
		return nil, fmt.Errorf("scan at %s: %w", w.Now.Format(time.RFC3339), err)
	}
	return set.Judge(w, res), nil
}

// ProposeForScan proposes and backtests rules for a scan's crawler_burst
// findings over its window, sized on the lookback before it (the same
// rules.Propose as an analysis). A scan without a crawler_burst finding, or
// without access logs, proposes nothing (nil).
func ProposeForScan(ctx context.Context, in evidence.Inputs, cfg scan.Config, res *scan.Result) (*rules.Proposal, error) {
	var crawlers []detect.Finding
	for _, f := range res.Findings {
		if f.Kind == detect.KindCrawlerBurst {
			crawlers = append(crawlers, f)
		}
	}
	if len(crawlers) == 0 || len(in.Access) == 0 {
		return nil, nil
	}
	prop, err := rules.Propose(ctx, rules.Input{Findings: crawlers, Access: in.Access, Site: in.Manifest.Site, DurationFormat: in.DurationFormat, Zone: in.LogZone,
		From: res.Window.From, To: res.Window.To, BaselineFrom: res.Window.From.Add(-cfg.Lookback), BaselineTo: res.Window.From})
	if err != nil {
		return nil, fmt.Errorf("scan: proposing rules: %w", err)
	}
	return prop, nil
}
