package rules

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
)

// Input is what Propose works from.
type Input struct {
	// Findings are the detectors' findings: crawler_burst ones become zones,
	// worker_saturation and healthcheck_starved feed the config advice.
	Findings []detect.Finding
	// Access lists the Caddy JSON access logs (plain or gzip), read once for
	// the profile and once for the recording of the requests to replay (again
	// for each replay when that recording would be too large); they must be
	// the files the findings came from.
	Access []string
	// Requests, when set, holds the requests of Access as the analysis read
	// them (ingest.Loaded.Requests): the passes read them from it instead of
	// parsing the logs again.
	Requests *accesslog.Spill
	// Site holds the site facts (logged-in cookie, health URI, timeouts, pool size).
	Site sources.Site
	// DurationFormat is the access logs' duration format as the analysis
	// read them (ingest.Inputs.DurationFormat), for a pass that reads them again.
	DurationFormat string
	// Zone is where times written without a zone are read (Caddy's wall and
	// common_log time formats), as the analysis read them: without it a
	// second read would place those lines in UTC, off the analysis' window.
	Zone *time.Location
	// From and To bound the incident window.
	From, To time.Time
	// BaselineFrom and BaselineTo bound the period the zones are sized on and
	// must not refuse ordinary traffic in; zero means the data before From, or,
	// when there is none, the data before the crawler's onset.
	BaselineFrom, BaselineTo time.Time
	// Listen is php-fpm's listen address when known: a path ("/run/php/www.sock")
	// is a Unix socket, host:port is TCP. "" means unknown; the advice then
	// covers both cases.
	Listen string
}

// Proposal is what Propose found worth proposing.
type Proposal struct {
	// Rules holds one rule per zone, each with its own backtest.
	Rules []Rule `json:"rules"`
	// Recommendations holds the config advice.
	Recommendations []Recommendation `json:"recommendations"`
	// DataQuality says what limited the rules (short baseline, values dropped as
	// unsafe, zones rejected and why).
	DataQuality []sources.QualityNote `json:"data_quality"`
	// Caddyfile is what rules.caddy holds: a comment saying what the block
	// needs, where it goes, how to check it and what it would have refused
	// (deploy.go), then Block.
	Caddyfile string `json:"caddyfile,omitempty"`
	// Block is every rule's zone in one rate_limit block, as Caddy validated it.
	Block string `json:"-"`
	// Backtest is the replay of that block as a whole (crawler = any crawler's fingerprint).
	Backtest *Backtest `json:"backtest,omitempty"`
	// adviceNotes is where the config advice's notes start in DataQuality.
	adviceNotes int
	// header is rules.caddy's comment, line by line (CaddyfileIn).
	header []prose.Text
	// zones are the zones of Rules, in their order.
	zones []Zone
	// replays says where the replays took their arrivals from, so that a
	// test can tell a proposal replayed from a recording from one streamed.
	replays replaySource
}

// replaySource is where a proposal's replays took their arrivals from: a
// recording of so many arrivals (recorded), else the requests streamed again
// for each replay, for the profile's possiblyLate arrivals or for the
// recording pass's note.
type replaySource struct {
	recorded     bool
	arrivals     int
	possiblyLate int
	note         *sources.QualityNote
}

// backtests are the backtests of p's rules, in their order.
func (p *Proposal) backtests() []Backtest {
	out := make([]Backtest, len(p.Rules))
	for i, r := range p.Rules {
		out[i] = r.Backtest
	}
	return out
}

// RulesProblems returns the notes that say the rules themselves (not the
// config advice, which needs metrics the rules do not) were limited by
// missing or doubtful evidence: every severity but info.
func (p *Proposal) RulesProblems() []sources.QualityNote {
	return sources.Problems(p.DataQuality[:p.adviceNotes])
}

// Sizing and acceptance.
const (
	// windowsInBaseline: a window is only used when the baseline holds this many
	// of it, so that its peak is a maximum over several windows, not one sample.
	windowsInBaseline = 6
	// minBaselineSpan is the shortest baseline a zone is sized on.
	minBaselineSpan = time.Minute
	// maxResizes bounds the doubling of events when a zone refused ordinary
	// traffic in the baseline.
	maxResizes = 6
	// tolerableBaselineRefused is the share of the baseline's ordinary
	// requests a zone may refuse before it is resized. A crawler already
	// walking its tools in the baseline holds a shared bucket there, and the
	// rare reader who looks like it (same language, no Referer, a tool) is
	// refused with it: growing the zone until that reader passes grows it
	// past the crawler's own rate, and the crawler then passes too (a zone
	// resized to 704 events for one reader in three hours refused a quarter
	// less of the crawl). One in a thousand is a fifth of the collateral
	// the rules aim under (0.5% of other logged-out requests); a zone that
	// refuses more is resized as before.
	tolerableBaselineRefused = 0.001
)

// Propose generates caddy-ratelimit v0.1.0 zones for the crawler_burst
// findings, sizes them on the baseline, validates them with Caddy, backtests
// them on the recorded requests, and adds the config advice. It reads the
// requests twice: the profile pass all of them, the recording pass those a
// zone may match, and sizing, backtest and resizing replay that recording
// from memory (recording.go); past a bound on the recording each replay
// streams the requests again instead. The requests come from in.Requests
// when the analysis kept them (no JSON parse at all), else from the logs,
// where the recording pass parses only the lines a zone may match.
func Propose(ctx context.Context, in Input) (*Proposal, error) {
	if !in.To.After(in.From) {
		return nil, fmt.Errorf("rules: window %s to %s is empty", in.From.Format(time.RFC3339), in.To.Format(time.RFC3339))
	}
	p := &Proposal{}
	note := func(sev sources.Severity, t prose.Text) {
		p.DataQuality = append(p.DataQuality, sources.Note("rules", sev, t))
	}
	var saturation *detect.Finding
	for i := range in.Findings {
		if in.Findings[i].Kind == detect.KindWorkerSaturation && saturation == nil {
			saturation = &in.Findings[i]
		}
	}
	refs, refNotes := crawlerRefs(in.Findings)
	p.DataQuality = append(p.DataQuality, refNotes...)

	var prof *profile
	switch {
	case len(refs) == 0:
		p.DataQuality = append(p.DataQuality, sources.Note("rules", sources.SeverityInfo, Messages.Say("rules.no_crawler", nil)))
	case len(in.Access) == 0:
		note(sources.SeverityWarning, Messages.Say("rules.no_access_log", nil))
	default:
		var err error
		prof, err = readProfile(ctx, &in, refs)
		if err != nil {
			return nil, fmt.Errorf("rules: profile: %w", err)
		}
		before := len(p.DataQuality)
		if err := p.propose(ctx, &in, refs, prof, saturation); err != nil {
			return nil, err
		}
		if narrowed, ok := narrowedProfile(prof, p.zones, p.backtests()); ok {
			// Proposed again from the narrower evidence, from the same
			// notes; kept only where more rules meet both goals.
			q := &Proposal{DataQuality: append([]sources.QualityNote(nil), p.DataQuality[:before]...)}
			if err := q.propose(ctx, &in, refs, narrowed, saturation); err != nil {
				return nil, err
			}
			if len(q.Rules) == len(p.Rules) && goalsMet(q) > goalsMet(p) {
				p = q
			}
		}
	}
	p99 := math.NaN()
	if prof != nil && prof.durations.N > 0 {
		p99 = prof.durations.Quantile(0.99)
	}
	p.adviceNotes = len(p.DataQuality)
	recs, notes := advise(in.Findings, in.Site, in.Listen, p99)
	p.Recommendations = recs
	p.DataQuality = append(p.DataQuality, notes...)
	return p, nil
}

// crawlerRefs lists the crawler_burst findings with their fingerprints.
func crawlerRefs(fs []detect.Finding) ([]crawlerRef, []sources.QualityNote) {
	var refs []crawlerRef
	var notes []sources.QualityNote
	for _, f := range fs {
		if f.Kind != detect.KindCrawlerBurst {
			continue
		}
		if f.Role == detect.RoleContext {
			// Present but not a cause (it rose too early or weighed too
			// little): limiting it would not have prevented the incident,
			// and readers who share its fingerprint would pay for the rule.
			notes = append(notes, sources.Note("rules", sources.SeverityInfo, Messages.Say("rules.crawler_context", f.ID)))
			continue
		}
		key, ok := clusterOf(f)
		if !ok {
			notes = append(notes, sources.QualityNote{Source: "rules", Severity: sources.SeverityWarning,
				Message: f.ID + ": the finding carries no fingerprint: no rule for it"})
			continue
		}
		dup := false
		for _, r := range refs {
			dup = dup || r.key == key
		}
		if dup {
			continue
		}
		if len(refs) == 64 {
			notes = append(notes, sources.QualityNote{Source: "rules", Severity: sources.SeverityWarning,
				Message: "more than 64 crawler fingerprints: only the first 64 get a zone"})
			break
		}
		ref := crawlerRef{finding: f.ID, key: key, spread: detect.FactsOf[detect.CrawlerBurstFacts](&f).Spread, onset: f.Start, end: f.End,
			measured: f.Routes != nil, members: membersOf(f)}
		if f.Fingerprint != nil {
			ref.method = f.Fingerprint.Method
		}
		for _, r := range f.Routes {
			if r.Expensive || r.Costly {
				ref.expensive = append(ref.expensive, r.Template)
			}
		}
		refs = append(refs, ref)
	}
	return refs, notes
}

// clusterOf returns a finding's cluster key: the in-process one, or one
// rebuilt from the fingerprint of a finding read back from report.json.
func clusterOf(f detect.Finding) (request.ClusterKey, bool) {
	if f.Cluster != nil {
		return *f.Cluster, true
	}
	fp := f.Fingerprint
	if fp == nil || fp.UserAgent == "" {
		return request.ClusterKey{}, false
	}
	return detect.KeyOf(fp.UserAgent, fp.AcceptLanguage, fp.LoggedIn, fp.SecChUa), true
}

// membersOf returns the fingerprints of an actor joined over several: the
// in-process keys, or those rebuilt from the fingerprint's members of a
// finding read back from report.json; nil for one fingerprint.
func membersOf(f detect.Finding) []request.ClusterKey {
	if f.Clusters != nil || f.Fingerprint == nil {
		return f.Clusters
	}
	var keys []request.ClusterKey
	for _, m := range f.Fingerprint.Members {
		keys = append(keys, detect.KeyOf(m.UserAgent, m.AcceptLanguage, m.LoggedIn, m.SecChUa))
	}
	return keys
}

// propose does the rules part of Propose: it generates, sizes and backtests
// the zones for prof's crawlers. Whether a crawler gets a zone per client or
// one bucket for all its clients is the finding's Spread fact, decided once
// by detect (detect.LimitAbove's margin over the busiest ordinary client,
// perclient.go); a zone that then refuses too little of its crawler is
// dropped and a note says so.
func (p *Proposal) propose(ctx context.Context, in *Input, refs []crawlerRef, prof *profile, sat *detect.Finding) error {
	note := func(sev sources.Severity, t prose.Text) {
		p.DataQuality = append(p.DataQuality, sources.Note("rules", sev, t))
	}
	bFrom, bTo, how, ok := baselineRange(in, prof, refs, note)
	if !ok {
		return nil
	}
	zones, notes := generate(prof.crawlers, prof.site)
	p.DataQuality = append(p.DataQuality, notes...)
	if len(zones) == 0 {
		return nil
	}
	for i := range zones {
		zones[i].Window, zones[i].Events = time.Minute, 1 // placeholders: matchers do not depend on them
	}
	snippet, err := Caddyfile(zones)
	if err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	adapted, err := validateZones(snippet, zones)
	if err != nil {
		return fmt.Errorf("rules: generated zones failed validation: %w", err)
	}
	m, err := loadMatchers(adapted, zones, in.Site.LoggedInCookie)
	if err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	e := &engine{in: in, refs: refs, matchers: m, readers: prof.readers}
	defer func() { e.matchers.close() }() // reload may replace them
	if sat != nil {
		e.serviceS = detect.FactsOf[detect.WorkerSaturationFacts](sat).ServiceTimeS.V
	}

	// Every zone gets the one window the baseline's span allows (below), so
	// the ranges the replays need are known now: the baseline, and the
	// window from one zone window before it (to warm the limiters).
	span := bTo.Sub(bFrom)
	win := candidateWindows[sizingWindow(span)]
	rec, recNote, err := e.record(ctx, prof, zones, win, bFrom, bTo, maxRecordedArrivals)
	if err != nil {
		return fmt.Errorf("rules: recording the requests to replay: %w", err)
	}
	if recNote != nil {
		p.DataQuality = append(p.DataQuality, *recNote)
	}
	p.replays = replaySource{possiblyLate: prof.possiblyLate, note: recNote}
	if rec != nil {
		e.arrivals = rec
		p.replays.recorded, p.replays.arrivals = true, rec.n
	}

	peaks, err := e.size(ctx, zones, win, bFrom, bTo)
	if err != nil {
		return fmt.Errorf("rules: sizing: %w", err)
	}
	if span < windowsInBaseline*win {
		p.DataQuality = append(p.DataQuality, sources.Note("rules", sources.SeverityWarning, Messages.Say("rules.baseline_few_windows", struct {
			Span   time.Duration
			N      int
			Window string
		}{span.Round(time.Second), windowsInBaseline, CaddyDuration(win)})))
	}
	for i := range zones {
		z := &zones[i]
		peak := peaks[i]
		z.Window = win
		z.Events = detect.LimitAbove(peak)
		z.sizing = Messages.Say("rules.sizing", struct {
			How, From, To        string
			Span                 time.Duration
			PerClient            bool
			Peak, Window, Events string
			Headroom, Slack      int
		}{how, stamp(bFrom), stamp(bTo), bTo.Sub(bFrom).Round(time.Second), z.PerClient, fmtInt(peak), CaddyDuration(win), fmtInt(z.Events), detect.LimitHeadroom, detect.LimitSlack})
	}

	// Backtest; resize zones that refuse ordinary traffic in the baseline;
	// drop zones that do not stop their crawler.
	wr, br, late, err := e.backtest(ctx, zones, bFrom, bTo)
	if err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	if resized, rejected, err := e.resize(ctx, zones, br, bFrom, bTo); err != nil {
		return err
	} else if resized {
		var kept []Zone
		var keptIndex []int
		for i := range zones {
			if rejected[i] > 0 {
				note(sources.SeverityWarning, Messages.Say("rules.zone_refuses", struct{ Finding, Zone, Events, Window, Refused string }{
					zones[i].finding, zones[i].Name, fmtInt(zones[i].Events), CaddyDuration(zones[i].Window), fmtInt(rejected[i])}))
				continue
			}
			kept, keptIndex = append(kept, zones[i]), append(keptIndex, i)
		}
		if len(kept) == 0 {
			return nil
		}
		if len(kept) < len(zones) {
			zones = kept
			if err := e.reload(zones, keptIndex); err != nil {
				return err
			}
		}
		if wr, br, late, err = e.backtest(ctx, zones, bFrom, bTo); err != nil {
			return fmt.Errorf("rules: %w", err)
		}
		for i := range zones {
			if n := ordinaryRefused(br.zone[i]); n > tolerableRefused(br.zone[i]) {
				note(sources.SeverityWarning, Messages.Say("rules.zone_still_refuses", struct{ Finding, Zone, Refused string }{zones[i].finding, zones[i].Name, fmtInt(n)}))
			}
		}
	}
	if tightened, err := e.tighten(ctx, zones, peaks, wr, br, bFrom, bTo); err != nil {
		return err
	} else if tightened {
		if wr, br, late, err = e.backtest(ctx, zones, bFrom, bTo); err != nil {
			return fmt.Errorf("rules: %w", err)
		}
	}
	if spared, err := e.spareOthers(ctx, zones, wr, br, bFrom, bTo); err != nil {
		return err
	} else if spared {
		if wr, br, late, err = e.backtest(ctx, zones, bFrom, bTo); err != nil {
			return fmt.Errorf("rules: %w", err)
		}
	}
	var kept []Zone
	var keptIndex []int
	for i := range zones {
		bt := wr.zone[i].window()
		if bt.CrawlerRequests == 0 || bt.CrawlerRefusedShare < detect.MinLimitCaught {
			said := struct{ Finding, Zone, Events, Window, Refused, Requests string }{
				zones[i].finding, zones[i].Name, fmtInt(zones[i].Events), CaddyDuration(zones[i].Window), fmtInt(bt.CrawlerRefused), fmtInt(bt.CrawlerRequests)}
			note(sources.SeverityWarning, Messages.Say("rules.zone_misses", said))
			continue
		}
		kept, keptIndex = append(kept, zones[i]), append(keptIndex, i)
	}
	if len(kept) < len(zones) {
		zones = kept
		if len(zones) == 0 {
			return nil
		}
		if err := e.reload(zones, keptIndex); err != nil {
			return err
		}
		if wr, br, late, err = e.backtest(ctx, zones, bFrom, bTo); err != nil {
			return fmt.Errorf("rules: %w", err)
		}
	}
	if late > 0 {
		note(sources.SeverityInfo, Messages.Say("rules.replayed_late", fmtInt(late)))
	}

	// The final snippets, each validated by Caddy.
	p.Block, err = Caddyfile(zones)
	if err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	if _, err := validateZones(p.Block, zones); err != nil {
		return fmt.Errorf("rules: the proposed block failed validation: %w", err)
	}
	all := wr.all.window()
	br.all.baselineInto(&all)
	all.BaselineFrom, all.BaselineTo = bFrom, bTo
	all.PHPSecondsBasis = e.costBasis()
	markOthersGoal(&all)
	markCrawlerGoal(&all)
	p.Backtest = &all
	for i := range zones {
		z := &zones[i]
		one, err := Caddyfile(zones[i : i+1])
		if err != nil {
			return fmt.Errorf("rules: %w", err)
		}
		// A zone alone prints the block when it is the only one: Caddy has
		// just adapted that text, for the same zones, and would say the same.
		if one != p.Block || len(zones) != 1 {
			if _, err := validateZones(one, zones[i:i+1]); err != nil {
				return fmt.Errorf("rules: zone %s failed validation: %w", z.Name, err)
			}
		}
		bt := wr.zone[i].window()
		br.zone[i].baselineInto(&bt)
		bt.BaselineFrom, bt.BaselineTo = bFrom, bTo
		bt.PHPSecondsBasis = e.costBasis()
		if markOthersGoal(&bt) {
			z.missed = Messages.Say("rules.others_missed", struct {
				Refused, Requests, Share, Goal, Crawler string
				PerClient                               bool
			}{fmtInt(bt.OtherLoggedOutRefused), fmtInt(bt.OtherLoggedOutRequests), pct(bt.OtherLoggedOutRefusedShare),
				pct(collateralGoal), pct(bt.CrawlerRefusedShare), z.PerClient})
		}
		if markCrawlerGoal(&bt) {
			z.crawlerMissed = Messages.Say("rules.crawler_missed", struct {
				Refused, Requests, Share, Goal, Passed string
				Resized, PerClient                     bool
			}{fmtInt(bt.CrawlerRefused), fmtInt(bt.CrawlerRequests), pct(bt.CrawlerRefusedShare), pct(actorGoal),
				fmtInt(bt.CrawlerRequests - bt.CrawlerRefused), z.resized.String() != "", z.PerClient})
		}
		said := why(z, refs, in.Findings, prof.readers.count(z.crawler))
		p.Rules = append(p.Rules, Rule{Name: z.Name, Caddyfile: one, Why: said.String(), WhyText: said, Finding: z.finding,
			Key: z.Key(), Window: CaddyDuration(z.Window), Events: z.Events, Backtest: bt})
	}
	p.zones = zones
	p.header = deployHeader(p, in.From, in.To)
	p.Caddyfile, err = p.CaddyfileIn(prose.EN)
	return err
}

// sizingWindow returns the index in candidateWindows of the window the zones
// get: the longest the baseline's span holds windowsInBaseline times, else
// the shortest.
func sizingWindow(span time.Duration) int {
	for i, win := range candidateWindows {
		if span >= windowsInBaseline*win {
			return i
		}
	}
	return len(candidateWindows) - 1
}

// bisections is how many times resize halves the gap between a failing and a
// passing size, after doubling found one that passes (to within 1/8).
const bisections = 3

// resize grows the events of each zone that refused more ordinary requests
// in the baseline (base) than it may (tolerableRefused) until it refuses no
// more there: doubling, then bisecting back between the last failing and the
// first passing size, so the zone stays as tight as the baseline allows. Each
// step replays the baseline alone. It reports whether anything changed, and,
// per zone, how many ordinary requests a zone still refused at its largest
// size (to be rejected). A zone left at its size that refused some within
// the tolerance says so in its rationale.
func (e *engine) resize(ctx context.Context, zones []Zone, base *replay, bFrom, bTo time.Time) (bool, []int, error) {
	rejected := make([]int, len(zones))
	lo := make([]int, len(zones)) // largest size known to refuse ordinary requests
	hi := make([]int, len(zones)) // smallest size known to refuse none (0: none yet)
	refused := make([]int, len(zones))
	allowed := make([]int, len(zones))
	needed := false
	for i := range zones {
		allowed[i] = tolerableRefused(base.zone[i])
		switch n := ordinaryRefused(base.zone[i]); {
		case n > allowed[i]:
			lo[i], refused[i], needed = zones[i].Events, n, true
		case n > 0:
			zones[i].tolerated = Messages.Say("rules.tolerated", struct{ Refused, Of string }{fmtInt(n), fmtInt(ordinaryRequests(base.zone[i]))})
		}
	}
	if !needed {
		return false, rejected, nil
	}
	first := append([]int(nil), refused...)
	start := make([]int, len(zones))
	for i := range zones {
		start[i] = zones[i].Events
	}
	check := func() error {
		r, err := e.baselineOnly(ctx, zones, bFrom, bTo)
		if err != nil {
			return fmt.Errorf("rules: resizing: %w", err)
		}
		for i := range zones {
			if lo[i] == 0 || hi[i] == zones[i].Events {
				continue
			}
			if n := ordinaryRefused(r.zone[i]); n > allowed[i] {
				lo[i], refused[i] = zones[i].Events, n
			} else {
				hi[i] = zones[i].Events
			}
		}
		return nil
	}
	for step := 0; step < maxResizes; step++ {
		growing := false
		for i := range zones {
			if lo[i] > 0 && hi[i] == 0 {
				zones[i].Events = lo[i] * 2
				growing = true
			}
		}
		if !growing {
			break
		}
		if err := check(); err != nil {
			return true, nil, err
		}
	}
	for i := range zones {
		if lo[i] > 0 && hi[i] == 0 {
			rejected[i] = refused[i]
		}
	}
	for step := 0; step < bisections; step++ {
		narrowing := false
		for i := range zones {
			if lo[i] > 0 && hi[i] > 0 && hi[i]-lo[i] > 1 {
				zones[i].Events = (lo[i] + hi[i]) / 2
				narrowing = true
			} else if hi[i] > 0 {
				zones[i].Events = hi[i]
			}
		}
		if !narrowing {
			break
		}
		if err := check(); err != nil {
			return true, nil, err
		}
	}
	for i := range zones {
		if lo[i] == 0 || hi[i] == 0 {
			continue
		}
		zones[i].Events = hi[i]
		zones[i].resized = Messages.Say("rules.resized", struct{ Events, Refused, Size, Allowed string }{fmtInt(start[i]), fmtInt(first[i]), fmtInt(hi[i]), fmtInt(allowed[i])})
	}
	return true, rejected, nil
}

// reload re-validates a zone set from which zones were dropped and loads its
// matchers; newToOld[j] is the index zone j had before.
func (e *engine) reload(zones []Zone, newToOld []int) error {
	snippet, err := Caddyfile(zones)
	if err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	adapted, err := validateZones(snippet, zones)
	if err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	m, err := loadMatchers(adapted, zones, e.in.Site.LoggedInCookie)
	if err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	// Match bits follow the zones' new indexes; crawler indexes do not change.
	// A recording keeps its bits, moved to the new indexes: a zone's matchers
	// depend on its targets and conditions alone, which a reload keeps.
	e.matchers.close()
	e.matchers = m
	e.source().remap(newToOld)
	return nil
}

// baselineRange picks the period zones are sized on: the given baseline, else
// the data before the window, else the data before the earliest crawler onset.
// how is "given", "before_window" or "before_onset".
func baselineRange(in *Input, prof *profile, refs []crawlerRef, note func(sev sources.Severity, t prose.Text)) (from, to time.Time, how string, ok bool) {
	if prof.first.IsZero() {
		note(sources.SeverityWarning, Messages.Say("rules.no_requests", nil))
		return from, to, "", false
	}
	end := prof.last.Add(time.Nanosecond)
	clipTo := func(a, b time.Time) (time.Time, time.Time) {
		if a.Before(prof.first) {
			a = prof.first
		}
		if b.After(end) {
			b = end
		}
		return a, b
	}
	if !in.BaselineFrom.IsZero() && in.BaselineTo.After(in.BaselineFrom) {
		a, b := clipTo(in.BaselineFrom, in.BaselineTo)
		if b.Sub(a) >= minBaselineSpan {
			return a, b, "given", true
		}
		note(sources.SeverityWarning, Messages.Say("rules.given_baseline_empty", struct{ From, To string }{
			in.BaselineFrom.Format(time.RFC3339), in.BaselineTo.Format(time.RFC3339)}))
	}
	if a, b := clipTo(prof.first, in.From); b.Sub(a) >= minBaselineSpan {
		return a, b, "before_window", true
	}
	var onset time.Time
	for _, r := range refs {
		if onset.IsZero() || r.onset.Before(onset) {
			onset = r.onset
		}
	}
	if a, b := clipTo(prof.first, onset); b.Sub(a) >= minBaselineSpan {
		note(sources.SeverityWarning, Messages.Say("rules.baseline_in_window", b.Sub(a).Round(time.Second)))
		return a, b, "before_onset", true
	}
	note(sources.SeverityWarning, Messages.Say("rules.no_baseline", nil))
	return from, to, "", false
}

// stamp prints an end of the baseline in the rationale: UTC, to the second.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// why explains a zone: what it matches and why, how it is keyed, how it is
// sized; readers is how many addresses under the crawler's fingerprint
// behaved like people.
func why(z *Zone, refs []crawlerRef, fs []detect.Finding, readers int) prose.Text {
	ref := refs[z.crawler]
	var f *detect.Finding
	for i := range fs {
		if fs[i].ID == ref.finding {
			f = &fs[i]
		}
	}
	w := zoneWhy{Finding: ref.finding, KeyName: ref.key.String(), Key: detect.SayKey(ref.key), Targets: describeTargets(z),
		TargetWhy: z.targetWhy, CondWhy: z.condWhy, PerClient: z.PerClient, Name: z.Name,
		Sizing: z.sizing, Resized: z.resized, HasResized: z.resized.String() != "",
		Tolerated: z.tolerated, HasTolerated: z.tolerated.String() != "",
		Tightened: z.tightened, HasTightened: z.tightened.String() != "",
		Spared: z.spared, HasSpared: z.spared.String() != "", Missed: z.missed, HasMissed: z.missed.String() != "",
		CrawlerMissed: z.crawlerMissed, HasCrawlerMissed: z.crawlerMissed.String() != ""}
	w.Checked, w.Unchecked = conditionsText(z, ref.key)
	w.LastUnchecked = len(w.Unchecked) - 1
	if z.requests > 0 {
		w.Covered, w.Requests = fmtInt(z.covered), fmtInt(z.requests)
		w.CoveredPct = fmt.Sprintf("%.1f", 100*float64(z.covered)/float64(z.requests))
	}
	if readers > 0 {
		w.Readers = fmtInt(readers)
	}
	if f != nil {
		cf := detect.FactsOf[detect.CrawlerBurstFacts](f)
		w.MaxPerIP, w.Addresses, w.Median = fmtInt(cf.RequestsPerIPMax), fmtInt(cf.DistinctIPs), trimFloat(cf.RequestsPerIPMedian)
	}
	return Messages.Say("rules.why", w)
}

// zoneWhy is what a zone's rationale says. Numbers arrive printed; an empty
// Requests, Readers or Addresses leaves its sentence out.
type zoneWhy struct {
	Finding, KeyName                  string
	Key                               prose.Text
	Targets, Checked, Unchecked       []prose.Text
	LastUnchecked                     int
	TargetWhy, CondWhy                []prose.Text
	Covered, Requests, CoveredPct     string
	Readers                           string
	PerClient                         bool
	Name, MaxPerIP, Addresses, Median string
	Sizing, Resized, Tolerated        prose.Text
	Tightened, Spared, Missed         prose.Text
	CrawlerMissed                     prose.Text
	HasResized, HasTolerated          bool
	HasTightened, HasSpared           bool
	HasMissed, HasCrawlerMissed       bool
}

// describeTargets renders a zone's targets for humans, one Text each.
func describeTargets(z *Zone) []prose.Text {
	var parts []prose.Text
	for _, t := range z.Targets {
		switch {
		case len(t.Paths) > 0:
			parts = append(parts, Messages.Say("rules.target.paths", strings.Join(t.Paths, " ")))
		case len(t.TitleNames) > 0:
			parts = append(parts, Messages.Say("rules.target.titles", strings.Join(t.TitleNames, ", ")))
		case t.QueryKey != "" && t.ValueRegexp != "":
			parts = append(parts, Messages.Say("rules.target.pattern", struct{ Key, Regexp string }{t.QueryKey, t.ValueRegexp}))
		case t.QueryKey != "":
			var vs []string
			for _, v := range t.QueryValues {
				vs = append(vs, t.QueryKey+"="+v)
			}
			parts = append(parts, Messages.Say("rules.target.values", strings.Join(vs, ", ")))
		}
	}
	return parts
}

func trimFloat(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

// ordinaryRefused counts the requests other than a crawler's fingerprint that a
// zone refused.
func ordinaryRefused(t *tally) int {
	return t.bt.LoggedInRefused + t.bt.OtherLoggedOutRefused
}

// ordinaryRequests is how many ordinary requests (no crawler's fingerprint)
// a replay saw.
func ordinaryRequests(t *tally) int {
	return t.bt.LoggedInRequests + t.bt.OtherLoggedOutRequests
}

// tolerableRefused is how many of a baseline replay's ordinary requests a
// zone may refuse (tolerableBaselineRefused of them, rounded down).
func tolerableRefused(t *tally) int {
	return int(tolerableBaselineRefused * float64(ordinaryRequests(t)))
}

// readRequests hands sink the requests of the access logs, in log order: from
// Requests when the input has them (the Stats are then zero), else by reading
// Access. A filter (nil for none) is only a way to skip work: a request it
// rejects may or may not reach sink. The logs' lines go through prefilter
// before they are parsed, the spill's records through spillFilter before
// the rest of them is decoded (it may also end the read where no later record
// can matter, and pass over those logged before its From unasked). Skipped
// lines were counted by the analysis.
func (in *Input) readRequests(ctx context.Context, prefilter func([]byte) bool, spillFilter *accesslog.SpillFilter, sink func([]sources.Request) error) (accesslog.Stats, error) {
	if in.Requests != nil {
		if spillFilter != nil {
			return accesslog.Stats{}, in.Requests.ReadFiltered(ctx, *spillFilter, sink)
		}
		return accesslog.Stats{}, in.Requests.Read(ctx, sink)
	}
	return accesslog.Read(ctx, in.Access, accesslog.Options{LoggedInCookie: in.Site.LoggedInCookie, Zone: in.Zone, Prefilter: prefilter, DurationFormat: in.DurationFormat}, nil, sink)
}

// readClassified is readRequests (with no prefilter) that also hands sink
// each request's path class as ingest found it, where the spill kept it
// (its tag, request.PathClass.Code) under this site's health URI; classes
// is nil otherwise, and the sink classifies. A pass over every request then
// classifies none of them again. The batch's Paths and Queries may be
// borrowed (Spill.ReadTaggedBorrowed): valid until sink returns, they are
// copied by whatever keeps one.
func (in *Input) readClassified(ctx context.Context, sink func(batch []sources.Request, classes []request.PathClass) error) (accesslog.Stats, error) {
	if in.Requests != nil {
		if scope, ok := in.Requests.TagScope(); ok && scope == in.Site.HealthURI {
			var classes []request.PathClass
			read := in.Requests.ReadTaggedBorrowed
			if !borrowSpillTargets {
				read = in.Requests.ReadTagged
			}
			return accesslog.Stats{}, read(ctx, func(batch []sources.Request, tags []uint8) error {
				classes = classes[:0]
				for _, tag := range tags {
					c, _ := request.ClassOfCode(tag) // "" for none: the sink classifies
					classes = append(classes, c)
				}
				return sink(batch, classes)
			})
		}
	}
	return in.readRequests(ctx, nil, nil, func(batch []sources.Request) error { return sink(batch, nil) })
}

// borrowSpillTargets is whether readClassified borrows the spill's targets;
// a test compares a pass with them borrowed and one with them owned.
var borrowSpillTargets = true
