package scan

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/fpmlog"
)

// Result is the outcome of one scan.
type Result struct {
	// Now is when the scan ran (or replays); Window is [Now-Since, Now).
	Now    time.Time
	Window Range
	// Baseline describes the slots compared with.
	Baseline BaselineInfo
	// Recent is the window's profile.
	Recent *Profile
	// Anomalies, most severe first.
	Anomalies []Anomaly
	// Measures are the site-wide measures against their baseline.
	Measures []Measure
	// Judged is false when the access log leaves too much of the window
	// unknown to call it anything (NotJudged says why): such a scan never
	// says "nothing anomalous". Unknown lists the window's stretches
	// without access-log lines (a missing head, gaps, a missing end).
	Judged    bool
	NotJudged string
	// NotJudgedText is NotJudged as said by the catalog.
	NotJudgedText prose.Text
	Unknown       []sources.Stretch
	// Findings and Checks are what the detectors concluded on the window.
	Findings []detect.Finding
	Checks   []detect.Check
	// DataQuality lists what could not be read or compared.
	DataQuality []sources.QualityNote
	// Read is what the scan read.
	Read Read
}

// BaselineInfo says what the window was compared with.
type BaselineInfo struct {
	// Method is "same hours on each previous day" or "same hours on the same
	// weekday".
	Method string `json:"method"`
	// MethodText is Method as said by the catalog.
	MethodText prose.Text `json:"-"`
	// Days is how far back the baseline reaches.
	Days int `json:"days"`
	// Slots are the baseline slots, most recent first, covered or not.
	Slots []Slot `json:"slots"`
	// Used counts the covered slots the comparison used; Seasonal is false
	// when they were too few and only the detectors judged the window.
	Used     int  `json:"used"`
	Seasonal bool `json:"seasonal"`
}

// Slot is one baseline slot.
type Slot struct {
	Range
	Covered  bool `json:"covered"`
	Requests int  `json:"requests"`
}

// Read is what a scan read, to answer "how much does an hourly scan pull".
type Read struct {
	// AccessFiles, AccessLines and AccessBytes are what the pass over the
	// access logs read (shared by every scan of a Set).
	AccessFiles int64 `json:"access_files"`
	AccessLines int64 `json:"access_lines"`
	AccessBytes int64 `json:"access_bytes"`
	// RawRange is the range whose raw lines the detectors needed (window and
	// lookback), RawLines how many lines fell in it.
	RawRange Range `json:"raw_range"`
	RawLines int   `json:"raw_lines"`
	// SlotLines counts the lines of the baseline slots: a live scan needs
	// only their aggregates (counts by fingerprint, status, latency buckets).
	SlotLines int `json:"slot_lines"`
	// MetricSamples is what the metric files held.
	MetricFiles   int   `json:"metric_files"`
	MetricSamples int64 `json:"metric_samples"`
}

// Anomalous reports whether any anomaly is warning or critical.
func (r *Result) Anomalous() bool {
	for i := range r.Anomalies {
		if r.Anomalies[i].Alarming() {
			return true
		}
	}
	return false
}

// Set is evidence read once for one or more scans: the CLI scans one now, a
// replay a whole schedule.
type Set struct {
	cfg    Config
	loaded *evidence.Loaded
	// ev is the evidence every scan starts from (its window and traffic
	// are each scan's own).
	ev    *detect.Evidence
	col   *Collector
	stats accesslog.Stats
	notes []sources.QualityNote
}

// Loader reads evidence in loc as the detectors read it, with their view of
// it: analysis.Load, the pipeline's one loader (which scan, below it, cannot
// import).
type Loader func(ctx context.Context, in evidence.Inputs, loc *time.Location) (*evidence.Loaded, *detect.Evidence, error)

// Load reads the evidence of in for scans at nows: metrics, logs and changes
// through load, the access logs in one pass into a Collector.
func Load(ctx context.Context, in evidence.Inputs, cfg Config, load Loader, nows ...time.Time) (*Set, error) {
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(nows) == 0 {
		return nil, fmt.Errorf("scan: no time to scan at")
	}
	sorted := append([]time.Time(nil), nows...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Before(sorted[j]) })
	// load reads everything but the access logs: the Collector reads
	// those, once, into the slots and windows the scans need.
	rest := in
	rest.Access = nil
	rest.Manifest.Window.From = sorted[0].Add(-cfg.Since).UTC()
	rest.Manifest.Window.To = sorted[len(sorted)-1].UTC()
	rest.Manifest.Baseline = nil
	loaded, ev, err := load(ctx, rest, cfg.Loc)
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	s := &Set{cfg: cfg, loaded: loaded, ev: ev, col: NewCollector(cfg, in.Manifest.Site, sorted)}
	// bundle.yaml says which ranges of access log a fetch pulled in full (a
	// live scan fetches its window and its slots, not the days between).
	var fetched []Range
	for _, q := range in.Manifest.Queries {
		if strings.HasPrefix(q.File, bundle.AccessDir+"/") && q.Complete && q.To.After(q.From) {
			fetched = append(fetched, Range{From: q.From, To: q.To})
		}
	}
	if len(fetched) > 0 {
		s.col.fetched = mergeRanges(fetched)
	}
	for _, n := range loaded.DataQuality {
		if n.Source != "access" { // about the access logs it was not given
			s.notes = append(s.notes, n)
		}
	}
	if len(in.Access) == 0 {
		s.notes = append(s.notes, sources.Note("access", sources.SeverityWarning, Messages.Say("note.no_access_log", nil)))
	}
	var skips sources.Skips
	onRead := in.ReadStage("reading the access log", in.Access)
	s.stats, err = accesslog.Read(ctx, in.Access, accesslog.Options{LoggedInCookie: in.Manifest.Site.LoggedInCookie, Zone: in.LogZone, ZoneWhy: in.LogZoneWhy, DurationFormat: in.DurationFormat, OnRead: onRead}, &skips,
		func(batch []sources.Request) error {
			for i := range batch {
				s.col.Observe(&batch[i])
			}
			return nil
		})
	if err != nil {
		loaded.Close()
		return nil, fmt.Errorf("scan: %w", err)
	}
	s.notes = append(s.notes, s.stats.Notes...)
	s.notes = append(s.notes, skips.Notes("access", "lines")...)
	s.col.finish()
	if q := loaded.Metrics; q != nil {
		for _, p := range s.col.slots {
			if p.Pool, err = poolProfile(ctx, q, p.Range, in.Manifest.Site.Workers); err != nil {
				loaded.Close()
				return nil, err
			}
		}
	}
	return s, nil
}

// UseProfile puts p, the profile of an earlier scan's window or slot
// (ProfileCache), in place of the slot of the same range when the evidence
// read does not cover that slot. It reports whether p was used.
func (s *Set) UseProfile(p *Profile) bool {
	cur := s.col.profile(p.Range)
	if cur == nil || !cur.To.Equal(p.To) || cur.Covered || !p.Covered {
		return false
	}
	s.col.byFrom[p.From.UnixNano()] = p
	for i := range s.col.slots {
		if s.col.slots[i] == cur {
			s.col.slots[i] = p
		}
	}
	return true
}

// Profile returns the profile of r, a window or slot of the scans loaded
// (nil for any other range).
func (s *Set) Profile(r Range) *Profile {
	if p := s.col.profile(r); p != nil && p.To.Equal(r.To) {
		return p
	}
	return nil
}

// Close releases the metric store.
func (s *Set) Close() error { return s.loaded.Close() }

// Window is one scan's window readied for the detectors (Set.Window): the
// evidence they read, and what the scan keeps to judge the window once they
// have run (Set.Judge). Package analysis runs the detectors between the two:
// the scan judges what they found but does not compose the pipeline.
type Window struct {
	// Now is when the scan runs; Evidence is the detectors' view of the
	// window, its lookback and what came before now.
	Now      time.Time
	Evidence *detect.Evidence
	pend     *pending
	cov      sources.Coverage
	notes    []sources.QualityNote
	// failed are the notes of the detectors that panicked (Guard).
	failed []sources.QualityNote
}

// Window readies the window ending at now, one of the times the Set was
// loaded for, for the detectors.
func (s *Set) Window(now time.Time) (*Window, error) {
	now = now.UTC()
	pend := s.col.scan(now)
	if pend == nil {
		return nil, fmt.Errorf("scan: %s was not among the times loaded", now.Format(time.RFC3339))
	}
	cfg := s.cfg
	w := cfg.Window(now)
	ev := *s.ev
	ev.From, ev.To = w.From, w.To
	ev.BaselineFrom, ev.BaselineTo = w.From.Add(-cfg.Lookback), w.From
	ev.Pool = nil
	ev.Traffic = nil
	// A scan at now knows nothing of what came after it: a replay over a
	// bundle that runs past now must not cite a later commit or check.
	ev.Changes = before(ev.Changes, now, func(c sources.Change) time.Time { return c.Time })
	ev.Health = before(ev.Health, now, func(h sources.HealthEvent) time.Time { return h.Time })
	ev.FPM = before(ev.FPM, now, func(e fpmlog.Event) time.Time { return e.Time })
	notes := append([]sources.QualityNote(nil), s.notes...)
	if pend.traffic.Total() > 0 {
		ev.Traffic = pend.traffic
	} else if s.stats.Requests > 0 {
		notes = append(notes, sources.Note("access", sources.SeverityWarning, Messages.Say("note.no_request", struct{ From, To, First, Last string }{
			cfg.observed(now).From.Format(time.RFC3339), now.Format(time.RFC3339), s.stats.First.Format(time.RFC3339), s.stats.Last.Format(time.RFC3339)})))
	}
	// What of the window the access log covers, for the detectors (an
	// incident's edge at minutes without lines is unknown) and the verdict.
	cov := windowCoverage(ev.Traffic, w)
	ev.Coverage = append(withoutSource(ev.Coverage, cov.Source), cov)
	return &Window{Now: now, Evidence: &ev, pend: pend, cov: cov, notes: notes}, nil
}

// Judge judges the window w (Set.Window) against its baseline, with res,
// what the detectors (each through w.Guard) found on w.Evidence.
func (s *Set) Judge(w *Window, res *detect.Result) *Result {
	cfg, now, ev, pend := s.cfg, w.Now, w.Evidence, w.pend
	win := cfg.Window(now)
	notes := append(append(append([]sources.QualityNote(nil), w.notes...), w.failed...), res.DataQuality...)

	out := &Result{Now: now, Window: win, Recent: s.col.profile(win), Findings: res.Findings, Checks: res.Checks}
	out.Baseline.Days = int(cfg.Baseline / day)
	method := methodEveryDay
	if cfg.SameWeekday() {
		method = methodSameWeekday
	}
	out.Baseline.Method, out.Baseline.MethodText = method.String(), method
	var covered []*Profile
	slotLines := 0
	for _, r := range cfg.Slots(now) {
		p := s.col.profile(r)
		out.Baseline.Slots = append(out.Baseline.Slots, Slot{Range: r, Covered: p.Covered, Requests: p.Requests})
		if p.Covered {
			covered = append(covered, p)
			slotLines += p.Lines
		}
	}
	out.Baseline.Used = len(covered)
	out.Baseline.Seasonal = len(covered) >= cfg.MinBaselineDays
	if !out.Baseline.Seasonal {
		notes = append(notes, sources.Note("scan", sources.SeverityWarning, Messages.Say("note.few_slots", struct{ Covered, Slots, Needed int }{
			len(covered), len(out.Baseline.Slots), cfg.MinBaselineDays})))
	}
	if s.stats.Requests > 0 && s.stats.First.After(win.From) {
		notes = append(notes, sources.Note("access", sources.SeverityWarning, Messages.Say("note.logs_begin", s.stats.First.Format(time.RFC3339))))
	}

	// What of the window the access log covers: minutes without lines at
	// the site's rate are unknown, and most of a window unknown is not
	// judged.
	out.Unknown = w.cov.Uncovered
	out.Judged, out.NotJudgedText = judgeable(w.cov, win, cfg.Loc)
	out.NotJudged = out.NotJudgedText.String()
	notes = append(notes, unknownNotes(w.cov, win, cfg.Loc)...)

	j := &judge{cfg: cfg, site: ev.Site, recent: out.Recent, base: covered, traffic: ev.Traffic, res: res, readings: ev.WindowReadings(), seasonal: out.Baseline.Seasonal}
	j.run()
	for _, a := range j.anomalies {
		out.Anomalies = append(out.Anomalies, *a)
	}
	out.Measures = j.measures
	out.DataQuality = append(notes, j.notes...)
	out.Read = Read{AccessFiles: s.stats.Files, AccessLines: s.stats.Lines, AccessBytes: s.stats.Bytes,
		RawRange: cfg.observed(now), RawLines: pend.traffic.Total(), SlotLines: slotLines,
		MetricFiles: s.loaded.MetricFiles, MetricSamples: s.loaded.MetricSamples}
	return out
}

// withoutSource is cov without the coverage of source.
func withoutSource(cov []sources.Coverage, source string) []sources.Coverage {
	var out []sources.Coverage
	for _, c := range cov {
		if c.Source != source {
			out = append(out, c)
		}
	}
	return out
}

// before keeps the items of xs that happened before now. When xs are in
// time order (the health checker's and php-fpm's logs are), those are a
// prefix of xs: a replay's every scan copied the whole week's health events,
// three quarters of readying its windows. The prefix's capacity is cut so
// that an append to it cannot write over xs, which the Set's other scans
// read.
func before[T any](xs []T, now time.Time, at func(T) time.Time) []T {
	if slices.IsSortedFunc(xs, func(a, b T) int { return at(a).Compare(at(b)) }) {
		n := sort.Search(len(xs), func(i int) bool { return !at(xs[i]).Before(now) })
		if n == 0 {
			return nil
		}
		return xs[:n:n]
	}
	var out []T
	for _, x := range xs {
		if at(x).Before(now) {
			out = append(out, x)
		}
	}
	return out
}

// Guard wraps each of ds so that a panic in it costs its own finding, not
// the scan: a scheduled scan that dies on one window stops announcing
// everything else. The failure is a could-not-run check, and an error in the
// window's data_quality (Judge).
func (w *Window) Guard(ds []detect.Detector) []detect.Detector {
	out := make([]detect.Detector, 0, len(ds))
	for _, d := range ds {
		out = append(out, guarded{Detector: d, failed: &w.failed})
	}
	return out
}

// guarded runs a detector so that a panic in it costs its own finding (Guard).
type guarded struct {
	detect.Detector
	failed *[]sources.QualityNote
}

func (g guarded) Detect(ctx context.Context, ev *detect.Evidence, prior []detect.Finding) (fs []detect.Finding, c detect.Check, err error) {
	defer func() {
		if p := recover(); p != nil {
			fs, err = nil, nil
			c = detect.Because(detect.OutcomeCouldNotRun, Messages.Say("check.detector_failed", fmt.Sprint(p)))
			*g.failed = append(*g.failed, sources.Note(string(g.Name()), sources.SeverityError, Messages.Say("note.detector_failed", struct{ Detector, From, To, Panic string }{
				string(g.Name()), ev.From.Format(time.RFC3339), ev.To.Format(time.RFC3339), fmt.Sprint(p)})))
		}
	}()
	return g.Detector.Detect(ctx, ev, prior)
}
