package live

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/cloudwatch"
	"github.com/aftermath-forensics/aftermath/sources/loki"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
	"github.com/aftermath-forensics/aftermath/sources/prometheus"
	"github.com/aftermath-forensics/aftermath/sources/redact"
)

// Files a fetch writes, relative to the bundle.
const (
	AccessFile     = "access/loki.log.gz"
	PrometheusFile = "metrics/prometheus.om.gz"
	CloudWatchFile = "metrics/cloudwatch.om.gz"
)

// Source names of the notes this package adds itself.
const (
	SourceChanges = "changes"
	SourceFetch   = "fetch"
)

// Progress is a running total of one phase of a fetch, passed to the
// progress callback (never concurrently).
type Progress struct {
	// Source is "loki", "prometheus" or "cloudwatch".
	Source string
	// Phase says what is being fetched: "minute counts", "access log",
	// "log caddy", "series", "metrics".
	Phase string
	// Unit names what Count counts: "lines", "series", "datapoints".
	Unit  string
	Count int64
	// Bytes is raw line bytes pulled (Loki); WireBytes response bytes read.
	Bytes, WireBytes int64
	// Requests is HTTP requests made so far, retries included (0 if unknown).
	Requests int64
	// Done and Total count units of work: Loki sub-ranges, Prometheus
	// queries, CloudWatch calls (Total 0 when unknown).
	Done, Total int
	// Started is when the phase began; Finished is set on its last report.
	Started  time.Time
	Finished bool
}

// ETA estimates the time left from the pace so far (false when it cannot).
func (p Progress) ETA(now time.Time) (time.Duration, bool) {
	if p.Done <= 0 || p.Total <= p.Done || p.Started.IsZero() {
		return 0, false
	}
	el := now.Sub(p.Started)
	return time.Duration(float64(el) / float64(p.Done) * float64(p.Total-p.Done)), true
}

// Fetch writes the evidence of the window [from, to) (and of the baseline
// before it) from the configured sources into a new bundle at outDir, which
// must not exist or be empty. It returns the manifest written and the data
// quality notes: "info" for what was skipped or pushed down by design,
// "warning" or "error" for what is missing. A source that fails or returns
// less than everything leaves what it did fetch in the bundle, an incomplete
// record in bundle.yaml and a note; the caller exits 1 when any note is not
// "info".
//
// The error is non-nil when no bundle could be written (outDir, a full disk),
// or when ctx ended: then the bundle holds what was fetched until then, and
// bundle.yaml is written all the same.
//
// progress (may be nil) is called with running totals.
func Fetch(ctx context.Context, cfg *Config, from, to time.Time, outDir string, progress func(Progress)) (*bundle.Manifest, []sources.QualityNote, error) {
	from, to = from.UTC(), to.UTC()
	if !to.After(from) {
		return nil, nil, fmt.Errorf("fetch: window end %s is not after its start %s", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	if err := prepareDir(outDir); err != nil {
		return nil, nil, err
	}
	if progress == nil {
		progress = func(Progress) {}
	}
	f := &fetcher{cfg: cfg, from: from, to: to, start: from.Add(-cfg.BaselineDuration()), dir: outDir, progress: progress}
	m := &bundle.Manifest{
		Window:    bundle.Window{From: from, To: to},
		Timezone:  cfg.Timezone,
		Site:      cfg.Site,
		Generator: "aftermath fetch",
	}
	if cfg.Path != "" {
		m.Generator += " --config " + filepath.Base(cfg.Path)
	}
	if f.start.Before(from) {
		m.Baseline = &bundle.Window{From: f.start, To: from}
	}
	f.manifest = m

	var errs []error
	for _, step := range []struct {
		name       string
		configured bool
		run        func(context.Context) error
	}{
		{loki.Source, cfg.Loki != nil, f.loki},
		{prometheus.Source, cfg.Prometheus != nil, f.prometheus},
		{cloudwatch.Source, cfg.CloudWatch != nil, f.cloudwatch},
	} {
		switch {
		case !step.configured:
			f.note(step.name, sources.SeverityInfo, "not configured: nothing fetched from "+step.name)
		case ctx.Err() != nil:
			f.note(step.name, sources.SeverityError, "not fetched: "+ctx.Err().Error())
			f.record(bundle.Query{Source: step.name, From: f.start, To: to, Failed: true, Note: "not fetched: " + ctx.Err().Error()})
		default:
			if err := step.run(ctx); err != nil {
				errs = append(errs, err) // a local failure (writing the bundle)
			}
		}
	}
	if err := f.changes(); err != nil {
		errs = append(errs, err)
	}
	// A query Loki cannot parse is a mistake in the configuration: the
	// caller exits 2, as for any other configuration error.
	errs = append(errs, f.queryErrs...)
	// A server or proxy may echo a credential into an error: scrub what
	// goes into bundle.yaml and the notes (the clients scrub too; this is the
	// last line of defence at the bundle's edge).
	secrets := cfg.secrets()
	for i := range m.Queries {
		m.Queries[i].Query = redact.String(m.Queries[i].Query, secrets)
		m.Queries[i].Note = redact.String(m.Queries[i].Note, secrets)
	}
	for i := range f.notes {
		f.notes[i].Message = redact.String(f.notes[i].Message, secrets)
	}
	if err := bundle.WriteManifest(outDir, m); err != nil {
		errs = append(errs, err)
	}
	if ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("fetch interrupted, the bundle holds what was fetched before: %w", ctx.Err()))
	}
	return m, f.notes, redact.Error(errors.Join(errs...), secrets)
}

// secrets lists the credentials the configuration resolves to (from the
// environment and files), with their basic-auth encodings, longest first.
func (c *Config) secrets() []string {
	var out []string
	if c.Loki != nil {
		if lc, err := c.Loki.clientConfig(); err == nil {
			out = redact.Secrets(lc.Username, lc.Password, lc.BearerToken, fileSecret(lc.BearerTokenFile))
		}
	}
	if c.Prometheus != nil {
		pc := c.Prometheus.clientConfig()
		pw := pc.Password
		if s := fileSecret(pc.PasswordFile); s != "" {
			pw = s
		}
		// Loki's secrets go in as extras: the merged list is sorted as one.
		out = redact.Secrets(pc.Username, pw, pc.BearerToken, append(out, fileSecret(pc.BearerTokenFile))...)
	}
	return out
}

// fileSecret is the trimmed content of a credential file ("" when path is
// empty or unreadable).
func fileSecret(path string) string {
	if path == "" {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// prepareDir creates dir, refusing to mix a new bundle into a non-empty one.
func prepareDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case err == nil && len(entries) > 0:
		return fmt.Errorf("fetch: %s is not empty", dir)
	case err != nil && !os.IsNotExist(err):
		return fmt.Errorf("fetch: %w", err)
	}
	for _, sub := range []string{bundle.AccessDir, bundle.MetricsDir, bundle.ChangesDir, bundle.LogsDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
	}
	return nil
}

// fetcher is the state of one Fetch.
type fetcher struct {
	cfg *Config
	// from, to: the window; start: the baseline's start (from without one).
	from, to, start time.Time
	dir             string
	progress        func(Progress)
	manifest        *bundle.Manifest
	notes           []sources.QualityNote
	// queryErrs are the configured queries a source refused as malformed.
	queryErrs []error
}

// note adds a data-quality note. The source is shown before the message, so
// a message starting with it ("loki: ...", as the clients' errors do) loses
// that prefix.
func (f *fetcher) note(source string, severity sources.Severity, msg string) {
	msg = strings.TrimPrefix(msg, source+": ")
	f.notes = append(f.notes, sources.QualityNote{Source: source, Severity: severity, Message: msg})
}

func (f *fetcher) record(q bundle.Query) { f.manifest.Queries = append(f.manifest.Queries, q) }

// gzFile is a gzip file being written.
type gzFile struct {
	f  *os.File
	gz *gzip.Writer
	bw *bufio.Writer
}

func createGz(path string) (*gzFile, error) {
	fh, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	gz := gzip.NewWriter(fh)
	return &gzFile{f: fh, gz: gz, bw: bufio.NewWriterSize(gz, 256<<10)}, nil
}

// createOut creates a gzip file for a .gz path, a plain one otherwise.
func createOut(path string) (*gzFile, error) {
	if strings.HasSuffix(path, ".gz") {
		return createGz(path)
	}
	fh, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	return &gzFile{f: fh, bw: bufio.NewWriterSize(fh, 256<<10)}, nil
}

func (g *gzFile) Write(p []byte) (int, error) { return g.bw.Write(p) }

func (g *gzFile) Close() error {
	err := g.bw.Flush()
	if g.gz != nil {
		if e := g.gz.Close(); err == nil {
			err = e
		}
	}
	if e := g.f.Close(); err == nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("fetch: writing %s: %w", g.f.Name(), err)
	}
	return nil
}

// lineSink writes Loki entries one per line, as Loki returns them.
func lineSink(w io.Writer) func(loki.Entry) error {
	return func(e loki.Entry) error {
		line := strings.TrimRight(e.Line, "\r\n")
		if _, err := io.WriteString(w, line); err != nil {
			return err
		}
		_, err := w.Write([]byte{'\n'})
		return err
	}
}

// pulled is what pullToFile leaves: the bundle's record of the pull, what the
// pull returned, and its error.
type pulled struct {
	rec bundle.Query
	res loki.Result
	err error
}

// pullToFile creates file in the bundle, pulls a query's lines into it and
// closes it. The record names the query and the window when the pull left
// them out, and carries note; the pull's own notes are kept. A failed pull
// marks the record failed with its error, and a malformed query is kept for
// Fetch's error: what else the failure means is the caller's to say. The
// error returned is the file's (it could not be written), not the pull's.
func (f *fetcher) pullToFile(file, query, note string, pull func(sink func(loki.Entry) error) (loki.Result, error)) (pulled, error) {
	out, err := createOut(filepath.Join(f.dir, file))
	if err != nil {
		return pulled{}, err
	}
	res, perr := pull(lineSink(out))
	if err := out.Close(); err != nil {
		return pulled{}, err
	}
	rec := res.Record(file)
	if rec.Query == "" {
		rec.Query = query
	}
	if rec.From.IsZero() {
		rec.From, rec.To = f.start, f.to
	}
	rec.Note += note
	f.notes = append(f.notes, res.Notes...)
	if perr != nil {
		rec.Complete, rec.Failed = false, true
		rec.Note += "; failed: " + perr.Error()
		if loki.IsQueryError(perr) {
			f.queryErrs = append(f.queryErrs, fmt.Errorf("fetch: the Loki query of %s is malformed: %w", file, perr))
		}
	}
	return pulled{rec: rec, res: res, err: perr}, nil
}

// computeInLoki has Loki compute a metric query per minute of [from, to)
// (loki.MinuteValues), adds its cost, and records it in bundle.yaml with
// file (may be empty) and a note saying what was computed and at what cost.
// use (called only when the query succeeds) reads the values and returns
// what to add to the note; its error, like the query's, marks the record
// failed with it and is returned: what else the failure means is the
// caller's to say. stretches, when given, are the only minutes [a, b) (from
// from) asked: their values are placed among [from, to)'s, the others 0, in
// one record of the whole range.
func (f *fetcher) computeInLoki(ctx context.Context, c *loki.Client, q string, from, to time.Time, file, what string, cost *Progress, use func(loki.MinuteValues) (string, error), stretches ...[2]int) error {
	var mv loki.MinuteValues
	var err error
	if stretches == nil {
		mv, err = c.MinuteValues(ctx, q, from, to)
	} else {
		mv, err = minuteValuesOver(ctx, c, q, from, to, stretches)
	}
	cost.Requests += int64(mv.Requests)
	cost.WireBytes += mv.WireBytes
	rec := bundle.Query{Source: loki.Source, Query: q, From: mv.From, To: mv.To, File: file, Series: len(mv.Series),
		Note: fmt.Sprintf("%s, %d requests, %d response bytes", what, mv.Requests, mv.WireBytes)}
	if err == nil {
		var more string
		more, err = use(mv)
		rec.Note += more
	}
	if err != nil {
		rec.Failed = true
		rec.Note += "; failed: " + err.Error()
	}
	rec.Complete = err == nil
	f.record(rec)
	return err
}

// minuteValuesOver is q's values per minute of [from, to) (whole minutes)
// asked over the stretches of minutes [a, b) alone, one answer: a series'
// values are 0 outside them.
func minuteValuesOver(ctx context.Context, c *loki.Client, q string, from, to time.Time, stretches [][2]int) (loki.MinuteValues, error) {
	n := int(to.Sub(from) / time.Minute)
	out := loki.MinuteValues{Query: q, From: from, To: to}
	index := map[string]int{}
	for _, st := range stretches {
		at := func(i int) time.Time { return from.Add(time.Duration(i) * time.Minute) }
		mv, err := c.MinuteValues(ctx, q, at(st[0]), at(st[1]))
		out.Requests += mv.Requests
		out.WireBytes += mv.WireBytes
		if err != nil {
			return out, err
		}
		for _, s := range mv.Series {
			key := fmt.Sprint(s.Metric)
			j, ok := index[key]
			if !ok {
				j = len(out.Series)
				index[key] = j
				out.Series = append(out.Series, loki.MinuteSeries{Metric: s.Metric, Labels: s.Labels, Values: make([]float64, n)})
			}
			copy(out.Series[j].Values[st[0]:st[1]], s.Values)
		}
	}
	return out, nil
}

func (f *fetcher) loki(ctx context.Context) error {
	lcfg := f.cfg.Loki
	lc, err := lcfg.clientConfig()
	if err != nil {
		f.failed(loki.Source, "client", err)
		return nil
	}
	cur := Progress{Source: loki.Source, Unit: "lines"}
	lc.Progress = func(p loki.Progress) {
		cur.Count, cur.Bytes, cur.Requests, cur.WireBytes = p.Lines, p.Bytes, p.Requests, p.WireBytes
		cur.Done, cur.Total = p.SubRangesDone, p.SubRangesTotal
		f.progress(cur)
	}
	c, err := loki.New(lc)
	if err != nil {
		f.failed(loki.Source, "client", err)
		return nil
	}
	// What the access log cost, counts and pulls, for the pushdown's summary.
	var accessCost bundle.PushdownCost
	var decodedAtPhase, processedAtPhase int64
	phase := func(name string) {
		cur = Progress{Source: loki.Source, Phase: name, Unit: "lines", Started: time.Now()}
		_, decodedAtPhase = c.ResponseBytes()
		processedAtPhase = c.BytesProcessed()
		f.progress(cur)
	}
	finish := func() {
		cur.Finished = true
		f.progress(cur)
		if !strings.HasPrefix(cur.Phase, "log ") {
			_, decoded := c.ResponseBytes()
			accessCost.Requests += cur.Requests
			accessCost.ResponseBytes += cur.WireBytes
			accessCost.ResponseDecodedBytes += decoded - decodedAtPhase
			accessCost.LokiBytesProcessed += c.BytesProcessed() - processedAtPhase
		}
	}
	query := joinQuery(lcfg.Selector, lcfg.Pipeline)

	// Which minutes to pull raw: all of them, or (pushdown) the baseline and
	// the minutes that stand out, and then the lines of the client families
	// that stood out from every other minute.
	var plan pushdownPlan
	var minutes []time.Time
	pushdown := f.to.Sub(f.from) > f.cfg.PushdownAfterDuration()
	defer func() {
		f.manifest.LokiLimitsLearned = c.LimitsLearned()
		for _, l := range f.manifest.LokiLimitsLearned {
			f.note(loki.Source, sources.SeverityInfo, l)
		}
		if c.Unreachable() {
			f.unreachable(lcfg.Addr)
		}
	}()
	if pushdown {
		phase("minute counts")
		var ok bool
		plan, ok = f.pushdown(ctx, c, query, &cur)
		minutes = plan.minutes
		finish()
		if plan.full {
			// The cost model chose the full pull (pullEstimate).
			pushdown = false
		}
		if !ok {
			// The counts choose the minutes to pull: without them no pull
			// is made, and each says so in bundle.yaml and a note.
			why := "the per-minute counts failed, and under pushdown they choose the minutes to pull"
			f.skipped(loki.Source, query, AccessFile, why)
			for _, lg := range lcfg.Logs {
				f.skipped(loki.Source, joinQuery(lg.Selector, lg.Pipeline), filepath.Join(bundle.LogsDir, lg.Name+".log"), why)
			}
			return nil
		}
	}

	pull := func(name, selector, pipeline, file string, access bool) error {
		query := joinQuery(selector, pipeline)
		phase(name)
		defer finish()
		note := ""
		if pushdown {
			note = fmt.Sprintf("; pushdown: raw lines of %d minutes (the baseline's sample and the flagged minutes, see %s)", len(minutes), MinuteCountsFile)
			if access && len(plan.families) > 0 {
				note += "; every line of those minutes, the client families' too (" + FamiliesFile + " has theirs in the other minutes)"
			}
		}
		var written lineMinutes
		p, err := f.pullToFile(file, query, note, func(sink func(loki.Entry) error) (loki.Result, error) {
			if access && pushdown {
				sink = written.record(sink)
			}
			if pushdown {
				// The selector and the configured pipeline only: no parser
				// runs in Loki for the minutes pulled whole (the families'
				// pull leaves them out instead).
				// Loki counted every minute's lines already: the pull
				// is checked against those counts, not counted again.
				return c.PullMinutes(ctx, query, minutes, countedMinutes(plan.rows), sink)
			}
			if plan.full && access {
				// The cost model's counts check the full pull: its
				// range is read once.
				return c.PullCounted(ctx, selector, pipeline, f.start, f.to, countedMinutes(plan.rows), sink)
			}
			return c.Pull(ctx, selector, pipeline, f.start, f.to, sink)
		})
		if err != nil {
			return err
		}
		rec, res, perr := p.rec, p.res, p.err
		if perr != nil {
			if len(sources.Problems(res.Notes)) == 0 {
				f.note(loki.Source, sources.SeverityError, fmt.Sprintf("%s: %v", file, perr))
			}
			if access && pushdown {
				f.dropPushdownSummary()
			}
		}
		if access && pushdown && (perr != nil || !res.Complete()) {
			if err := f.countFailedPull(ctx, c, &plan, res, written, &cur); err != nil {
				return err
			}
		}
		// Like Prometheus' "no series matched": a selector that matches
		// nothing is most often a typo ({job="cadddy"}), and an empty access
		// log would read as a quiet site. Under pushdown the counts decide:
		// the flagged minutes alone may hold no line. A selector whose
		// streams have lines around the window (a day before it, or since)
		// is right: the window itself was empty in Loki.
		if perr == nil && res.Lines() == 0 && (!pushdown || plan.counted == 0) {
			span := fmt.Sprintf("[%s, %s)", f.start.Format(time.RFC3339), f.to.Format(time.RFC3339))
			around, serr := c.Series(ctx, f.start.Add(-24*time.Hour), maxTime(f.to, time.Now()), selector)
			switch {
			case serr == nil && len(around) > 0:
				f.note(loki.Source, sources.SeverityInfo, fmt.Sprintf("%s: no line in %s, although %s has lines in the day before or since", file, span, selector))
			case access:
				why := "check the selector"
				if serr != nil {
					why = fmt.Sprintf("check the selector (whether it has lines around the window is unknown: %v)", serr)
				}
				rec.Complete = false
				rec.Note += "; no stream matched the selector"
				f.note(loki.Source, sources.SeverityError, fmt.Sprintf("%s: no stream matched %s in %s or the day before or since: %s", file, query, span, why))
			default:
				// Caddy's and php-fpm's own logs may be quiet for long.
				f.note(loki.Source, sources.SeverityInfo, fmt.Sprintf("%s: no stream matched %s in %s or the day before or since: check the selector, unless this log is that quiet", file, query, span))
			}
		}
		f.record(rec)
		return nil
	}
	if err := pull("access log", lcfg.Selector, lcfg.Pipeline, AccessFile, true); err != nil {
		return err
	}
	if len(plan.families) > 0 {
		if err := f.pullFamilies(ctx, c, query, &plan, phase, finish); err != nil {
			return err
		}
	}
	if pushdown || plan.full {
		accessCost.LimitsLearned = c.LimitsLearned()
		f.pushdownCost(accessCost, plan)
	}
	for _, lg := range lcfg.Logs {
		// Plain text: php-fpm's log reader does not read .gz.
		file := filepath.Join(bundle.LogsDir, lg.Name+".log")
		if ctx.Err() != nil {
			f.note(loki.Source, sources.SeverityError, fmt.Sprintf("%s not fetched: %v", file, ctx.Err()))
			f.record(bundle.Query{Source: loki.Source, Query: joinQuery(lg.Selector, lg.Pipeline), From: f.start, To: f.to, File: file,
				Failed: true, Note: "not fetched: " + ctx.Err().Error()})
			continue
		}
		if err := pull("log "+lg.Name, lg.Selector, lg.Pipeline, file, false); err != nil {
			return err
		}
	}
	return nil
}

// unreachableNote is the note of the record that says Loki was
// unreachable (LokiUnreachable finds it).
const unreachableNote = "unreachable: the last request failed after every retry, and none succeeded since"

// unreachable records that Loki at addr stopped answering: whatever mode
// the fetch ran in (full pull or pushdown), this record and its note name
// it, so that the command's last line can (LokiUnreachable).
func (f *fetcher) unreachable(addr string) {
	where := "Loki at " + redactURL(addr)
	f.note(loki.Source, sources.SeverityError, where+" is "+unreachableNote)
	f.record(bundle.Query{Source: loki.Source, Query: where, From: f.start, To: f.to, Failed: true, Note: unreachableNote})
}

// LokiUnreachable returns "Loki at <address>" when the fetch that wrote m
// found Loki unreachable.
func LokiUnreachable(m bundle.Manifest) (string, bool) {
	for _, q := range m.Queries {
		if q.Source == loki.Source && q.Failed && q.Note == unreachableNote {
			return q.Query, true
		}
	}
	return "", false
}

// redactURL drops the user information of an address.
func redactURL(addr string) string {
	u, err := url.Parse(addr)
	if err != nil || u.User == nil {
		return addr
	}
	u.User = nil
	return u.String()
}

// IsPulledAccess reports whether q is a pull of raw access-log lines from
// Loki: the access log (AccessFile), the client families pulled across the
// range (FamiliesFile) and the second passes' files, not the counts.
func IsPulledAccess(q bundle.Query) bool {
	return q.Source == loki.Source && strings.HasPrefix(q.File, bundle.AccessDir+"/") && strings.HasSuffix(q.File, ".log.gz")
}

// failed records a source that could not run at all.
func (f *fetcher) failed(source, what string, err error) {
	text := strings.TrimPrefix(err.Error(), source+": ")
	f.note(source, sources.SeverityError, fmt.Sprintf("%s: %s; nothing fetched", what, text))
	f.record(bundle.Query{Source: source, From: f.start, To: f.to, Failed: true, Note: "failed: " + text})
}

// skipped records a pull that was not made, with why, as a failed record and
// an error note: evidence not fetched is missing, never quiet.
func (f *fetcher) skipped(source, query, file, why string) {
	f.note(source, sources.SeverityError, fmt.Sprintf("%s not fetched: %s", file, why))
	f.record(bundle.Query{Source: source, Query: query, From: f.start, To: f.to, File: file, Failed: true, Note: "not fetched: " + why})
}

// dropPushdownSummary removes what a pushdown said it pulled (the info note
// and the sentence in the minute counts' record) after the raw pull failed:
// those minutes were not pulled after all, and the failure has its own note.
func (f *fetcher) dropPushdownSummary() {
	kept := f.notes[:0]
	for _, n := range f.notes {
		if !(n.Severity == sources.SeverityInfo && strings.HasPrefix(n.Message, pushdownMark)) {
			kept = append(kept, n)
		}
	}
	f.notes = kept
	for i, q := range f.manifest.Queries {
		if q.File == MinuteCountsFile {
			if j := strings.Index(q.Note, "; "+pushdownMark); j >= 0 {
				f.manifest.Queries[i].Note = q.Note[:j]
			}
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func joinQuery(selector, pipeline string) string {
	q := strings.TrimSpace(selector)
	if p := strings.TrimSpace(pipeline); p != "" {
		q += " " + p
	}
	return q
}

// pushdownPlan is what a pushdown decided to pull.
type pushdownPlan struct {
	// minutes are pulled whole: the baseline's sample and the minutes that
	// stand out.
	minutes []time.Time
	// families are the client families whose lines are pulled in the
	// minutes not pulled whole, in familySpans (cut by pullFamilies once
	// the access pull has settled which minutes those are), from
	// familyPerMinute, their lines per minute as Loki counted them.
	families        []string
	familySpans     []loki.Span
	familyPerMinute []float64
	// counted is the number of lines the per-minute counts found.
	counted int64
	// fullLines and fullBytes are what a full pull would pull (-1: unknown).
	fullLines, fullBytes int64
	// estimate is the cost model's (nil when the bytes per minute are
	// unknown); full is true when it chose the full pull, and then nothing
	// else of the plan is used.
	estimate *bundle.PullEstimate
	full     bool
	// baselineMinutes and baselineSampled: the baseline's minutes, and how
	// many of them are pulled raw.
	baselineMinutes, baselineSampled int
	// rows are access/minute-counts.csv's; status what Loki counted per
	// minute and status of statusLines (the lines no pull reads),
	// nil when it was not asked (every minute pulled) or failed.
	rows        []Minute
	status      *statusCounts
	statusLines statusLines
	// familyStatus is what the counts per family counted per status
	// group (nil when they failed): the status counts of statusLines, and
	// of the families pulled, are sums of it.
	familyStatus familyStatus
}

// statusCounted is the count of every line of statusLines per status group
// and minute, summed from familyStatus (nil when that is unknown).
func (p *pushdownPlan) statusCounted() *lineCounts {
	if p.familyStatus == nil {
		return nil
	}
	return p.familyStatus.counts(p.families, false)
}

// fullBytes has Loki measure the raw bytes of a full pull of [start, to)
// (bytes_over_time, which reads no line into a parser), in total (-1 when
// it cannot) and per minute of the counts' minutes (nil when it cannot, or
// the minutes do not match). A failure loses only the comparison and the
// cost model, nothing of the evidence: its record is marked failed, and an
// info note says the saving is not stated.
func (f *fetcher) fullBytes(ctx context.Context, c *loki.Client, query string, minutes int, cost *Progress) (int64, []float64) {
	var n float64
	var perMinute []float64
	err := f.computeInLoki(ctx, c, "sum(bytes_over_time("+query+" "+loki.MinuteRange+"))", f.start, f.to, "",
		"the raw bytes a full pull would read per minute, measured in Loki for the cost model and the pushdown's cost summary", cost,
		func(mv loki.MinuteValues) (string, error) {
			perMinute = make([]float64, minutes)
			for _, s := range mv.Series {
				if len(s.Values) != minutes {
					perMinute = nil
				}
				for i, v := range s.Values {
					n += v
					if perMinute != nil {
						perMinute[i] += v
					}
				}
			}
			return "", nil
		})
	if err != nil {
		f.note(loki.Source, sources.SeverityInfo, fmt.Sprintf("the bytes of a full pull are unknown, so the pushdown's saving is not stated and no cost model chose between it and a full pull: %v", err))
		return -1, nil
	}
	return int64(math.Round(n)), perMinute
}

// pushdownCost states in bundle.yaml and a note what the pushdown pulled of
// the access log against a full pull; when the cost model chose the full
// pull, bundle.yaml's full_pull section states what it cost, with both
// estimates (its note was made when it chose).
func (f *fetcher) pushdownCost(cost bundle.PushdownCost, plan pushdownPlan) {
	for _, q := range f.manifest.Queries {
		if q.Source == loki.Source && (q.File == AccessFile || q.File == FamiliesFile) {
			cost.PulledLines += q.Lines
			cost.PulledBytes += q.Bytes
		}
	}
	cost.FullLines, cost.FullBytes, cost.Families, cost.Estimate = plan.fullLines, plan.fullBytes, plan.families, plan.estimate
	cost.BaselineMinutes, cost.BaselineSampled = plan.baselineMinutes, plan.baselineSampled
	sample := f.cfg.Pushdown.baselineSample()
	cost.BaselineSampleBlocks, cost.BaselineSampleBlockMinutes = sample.blocks, sample.block
	if plan.full {
		// What the full pull the cost model chose cost: its section
		// states both estimates, the note below is the pushdown's. The
		// baseline was pulled whole, no sample taken.
		cost.BaselineSampled, cost.BaselineSampleBlocks, cost.BaselineSampleBlockMinutes = cost.BaselineMinutes, 0, 0
		f.manifest.FullPull = &cost
		return
	}
	cost.SecondPassMaxPasses, cost.SecondPassMaxMinutes = MaxSecondPasses, maxSecondPassMinutes
	cost.PullFailed = pullFailedStretches(plan.rows)
	f.manifest.Pushdown = &cost
	msg := fmt.Sprintf("%spulled %d access-log lines (%d bytes) in %d requests to Loki (%d response bytes on the wire, %d unpacked; Loki read %d bytes to answer)", pushdownMark,
		cost.PulledLines, cost.PulledBytes, cost.Requests, cost.ResponseBytes, cost.ResponseDecodedBytes, cost.LokiBytesProcessed)
	if cost.FullBytes > 0 {
		msg += fmt.Sprintf("; a full pull would have pulled %d lines (%d bytes, as Loki measured them): %.1f%% of its bytes", cost.FullLines, cost.FullBytes,
			100*float64(cost.PulledBytes)/float64(cost.FullBytes))
	}
	if cost.Estimate != nil {
		msg += "; " + describeEstimate(*cost.Estimate)
	}
	f.note(loki.Source, sources.SeverityInfo, msg)
}

// pushdown counts lines per minute inside Loki, runs the cost model, flags
// minutes and client families, writes access/minute-counts.csv and the
// per-minute status counts of the lines it will not pull, and returns what
// to pull (false when the counts failed: then nothing is pulled, which the
// caller records). When the cost model chooses the full pull, plan.full is
// set and plan.rows hold every minute's count, which the full pull is
// checked against.
func (f *fetcher) pushdown(ctx context.Context, c *loki.Client, query string, cost *Progress) (pushdownPlan, bool) {
	// The cheapest count first: every line per minute, with the selector and
	// the configured pipeline alone (no parser of ours), the very lines a
	// pull asks for. It flags the minutes that stand out by their volume,
	// and with the bytes per line the index gives, the cost model runs
	// before any query parses a line.
	mc, err := minuteTotals(ctx, c, query, f.start, f.to)
	cost.Requests, cost.WireBytes, cost.Done, cost.Total = int64(mc.Requests), mc.WireBytes, 1, 3 // line, failed and family counts
	for _, n := range mc.Totals() {
		cost.Count += n
	}
	rec := mc.Record(MinuteCountsFile)
	if rec.Query == "" {
		rec.Query = query
		rec.From, rec.To = f.start, f.to
	}
	rec.Note = fmt.Sprintf("every line per minute, no parser: the cost model's counts and the lines each pull is checked against, %d requests, %d response bytes", mc.Requests, mc.WireBytes)
	if err != nil {
		rec.Complete, rec.Failed = false, true
		rec.Note += "; failed: " + err.Error()
		f.record(rec)
		f.note(loki.Source, sources.SeverityError, fmt.Sprintf(
			"per-minute counts failed, so no access-log line was pulled (a window up to pushdown_after %s is pulled in full instead): %v",
			f.cfg.PushdownAfterDuration(), err))
		if loki.IsQueryError(err) {
			f.queryErrs = append(f.queryErrs, fmt.Errorf("fetch: the Loki query of the per-minute counts is malformed: %w", err))
		}
		return pushdownPlan{}, false
	}
	lines := mc.Totals()
	var counted int64
	for _, n := range lines {
		counted += n
	}
	windowStart := max(0, int(f.from.Sub(mc.From)/time.Minute))
	factor, margin, sample := f.cfg.Pushdown.factor(), int(f.cfg.Pushdown.margin()/time.Minute), f.cfg.Pushdown.baselineSample()
	plan := pushdownPlan{counted: counted, baselineMinutes: windowStart, fullLines: counted}
	rowsOf := func(failed []int64) []Minute {
		reasons := flagMinutes(lines, failed, windowStart, sample, factor, margin)
		rows := make([]Minute, len(lines))
		for i := range lines {
			rows[i] = Minute{T: mc.Minute(i), Lines: lines[i], Failed: -1, Reason: reasons[i], Pulled: reasons[i] != ""}
			if failed != nil {
				rows[i].Failed = failed[i]
			}
		}
		return rows
	}
	chooseFull := func(rows []Minute, est bundle.PullEstimate, records ...bundle.Query) (pushdownPlan, bool) {
		// The counts stay in bundle.yaml as what the model read; no
		// minute-counts.csv: every minute is pulled.
		for _, r := range records {
			r.File = ""
			f.record(r)
		}
		f.note(loki.Source, sources.SeverityInfo, fmt.Sprintf("the window is longer than pushdown_after (%s), but its access log was pulled whole: %s",
			f.cfg.PushdownAfterDuration(), describeEstimate(est)))
		plan.full, plan.rows, plan.estimate = true, rows, &est
		return plan, true
	}

	// The cost model on the line counts alone: the minutes that stand out
	// by their volume, their margins and the baseline's sample are a lower
	// bound of what a pushdown pulls. A full pull chosen here runs no | json.
	rows := rowsOf(nil)
	var minuteBytes []float64
	var bytesFrom string
	var lowerBound int64
	plan.fullBytes, minuteBytes, bytesFrom = f.minuteBytes(ctx, c, query, lines, cost)
	estimateOnCounts := func(rows []Minute) (bundle.PullEstimate, bool) {
		est := pullEstimate(rows, minuteBytes, nil, 1+minuteStatusQueries(rows, true), f.cfg.Pushdown.maxShare())
		est.BytesFrom, lowerBound = bytesFrom, est.PushdownBytes
		return est, est.Chosen == bundle.ChosenFull
	}
	if minuteBytes != nil {
		if est, full := estimateOnCounts(rows); full {
			rec.Note += "; " + describeEstimate(est)
			return chooseFull(rows, est, rec)
		}
	}

	// The failed lines per minute, with no parser either: a line filter on
	// the raw JSON keeps exactly the lines failedGroup counts
	// (failedLineFilter). The minutes whose failed lines stand out join the
	// estimate before any query parses a line, and the flags whatever the
	// counts per family say.
	fq := joinQuery(query, failedLineFilter(f.cfg.Site.ClientTimeoutS))
	fc, ferr := minuteTotals(ctx, c, fq, f.start, f.to)
	cost.Requests, cost.WireBytes, cost.Done = cost.Requests+int64(fc.Requests), cost.WireBytes+fc.WireBytes, 2
	frec := fc.Record(MinuteCountsFile)
	if frec.Query == "" {
		frec.Query, frec.From, frec.To = fq, f.start, f.to
	}
	frec.Note = fmt.Sprintf("failed lines per minute, no parser (a line filter on the raw JSON: a failed status, or a duration above the clients' timeout when it is known), %d requests, %d response bytes", fc.Requests, fc.WireBytes)
	if ferr == nil && fc.Minutes() != mc.Minutes() {
		ferr = fmt.Errorf("%d minutes counted, %d expected", fc.Minutes(), mc.Minutes())
	}
	var rawFailed []int64
	if ferr != nil {
		frec.Complete, frec.Failed = false, true
		frec.Note += "; failed: " + ferr.Error()
	} else {
		rawFailed = fc.Totals()
	}
	records := []bundle.Query{rec, frec}
	if minuteBytes != nil && rawFailed != nil {
		rows = rowsOf(rawFailed)
		if est, full := estimateOnCounts(rows); full {
			rec.Note += "; " + describeEstimate(est)
			records[0] = rec
			return chooseFull(rows, est, records...)
		}
	}

	// One metric query counts every line per minute, client family and
	// status: its families flag the clients that rose slowly, in one pass
	// over the range. When it fails (Loki's max_query_series, a stage Loki
	// refuses), no family is pulled across the range.
	fmc, famCounts, famStatus, famFailed, famErr := familyMinutes(ctx, c, query, f.cfg.Site.ClientTimeoutS, f.start, f.to)
	cost.Requests, cost.WireBytes, cost.Done = cost.Requests+int64(fmc.Requests), cost.WireBytes+fmc.WireBytes, 3
	famRec := fmc.Record(MinuteCountsFile)
	if famRec.Query == "" {
		famRec.Query, famRec.From, famRec.To = familyCountQuery(query, f.cfg.Site.ClientTimeoutS), f.start, f.to
	}
	famRec.Note = fmt.Sprintf("per-minute counts of each client family (agent/language) and status, %d requests, %d response bytes", fmc.Requests, fmc.WireBytes)
	if famErr == nil && fmc.Minutes() != mc.Minutes() {
		famErr = fmt.Errorf("%d minutes counted per family, %d expected", fmc.Minutes(), mc.Minutes())
	}
	if famErr != nil {
		famRec.Complete, famRec.Failed = false, true
		famRec.Note += "; failed: " + famErr.Error()
		famCounts, famStatus, famFailed = nil, nil, nil
	}
	records = append(records, famRec)
	const famAt = 2 // famRec's index in records

	// The failed lines per minute are the line filter's; its count and the
	// family count's failed groups (failedGroup) are of the same lines, and
	// where they differ (a line the filter reads otherwise than | json) the
	// parser's stand, as the detectors read the lines with one.
	failed := rawFailed
	switch {
	case famFailed != nil && failed != nil && !slices.Equal(famFailed, failed):
		var n int
		for i := range failed {
			if failed[i] != famFailed[i] {
				n++
			}
		}
		f.note(loki.Source, sources.SeverityWarning, fmt.Sprintf("the failed lines the line filter counted (%s) differ from the parsed count's in %d minutes: the parsed counts flag the minutes", failedLineFilter(f.cfg.Site.ClientTimeoutS), n))
		failed = famFailed
	case failed == nil && famFailed != nil:
		failed = famFailed
	case failed == nil:
		f.note(loki.Source, sources.SeverityWarning, fmt.Sprintf("per-minute counts of failed requests failed, minutes are flagged on volume alone: %v", ferr))
	}
	rows = rowsOf(failed)
	plan.familyStatus = famStatus
	if famErr == nil && famStatus == nil {
		records[famAt].Note += "; counted per family alone: Loki refused the count per family and status for its series (max_query_series), so the status counts of the minutes not pulled are a query of their own"
	}
	if famStatus != nil {
		records[famAt].Note += fmt.Sprintf("; its status groups, summed over the families not pulled, are the status counts of every line of the minutes not pulled (%s): no query of their own", bundle.MinuteStatusFile)
	}
	for _, r := range rows {
		if r.Pulled {
			plan.minutes = append(plan.minutes, r.T)
		}
		if r.Reason == ReasonBaseline {
			plan.baselineSampled++
		}
	}
	if len(plan.minutes) < len(rows) {
		var chose string
		plan.families, plan.familyPerMinute, chose = f.families(famCounts, famErr, lines, windowStart, factor)
		if chose != "" {
			records[famAt].Note += "; " + chose
		}
	}
	// The cost model again, on every minute and family the pushdown would
	// pull: the family count is made, what is left is PHP's seconds.
	if minuteBytes != nil {
		fams := plan.familyPerMinute
		if fams == nil {
			fams = make([]float64, len(rows))
		}
		est := pullEstimate(rows, minuteBytes, fams, minuteStatusQueries(rows, famStatus != nil), f.cfg.Pushdown.maxShare())
		est.BytesFrom, est.LineCountsPushdownBytes = bytesFrom, lowerBound
		if est.Chosen == bundle.ChosenFull {
			records[0].Note += "; " + describeEstimate(est)
			plan.minutes, plan.families, plan.familyPerMinute, plan.familyStatus, plan.baselineSampled = nil, nil, nil, nil, 0
			return chooseFull(rows, est, records...)
		}
		plan.estimate = &est
	}
	if err := writeFileWith(filepath.Join(f.dir, MinuteCountsFile), func(w io.Writer) error { return WriteMinuteCounts(w, rows) }); err != nil {
		f.note(SourceFetch, sources.SeverityError, err.Error())
	}
	cost.Total += minuteStatusQueries(rows, famStatus != nil)
	// The counts are of the lines not pulled: neither in a pulled minute nor
	// of a pulled family.
	plan.rows, plan.statusLines = rows, statusLines{query, familyFilter(plan.families, false)}
	plan.status = f.minuteStatus(ctx, c, plan.statusLines, rows, plan.statusCounted(), cost)
	pm, am, pl, al := PulledShare(rows, f.from, f.to)
	share := 0.0
	if al > 0 {
		share = 100 * float64(pl) / float64(al)
	}
	summary := fmt.Sprintf("raw lines were pulled for %d of the window's %d minutes (%d of its %d lines, %.1f%%)", pm, am, pl, al, share)
	if windowStart > 0 {
		summary += fmt.Sprintf(" and for %d of the baseline's %d minutes (a sample: the rest of the baseline is counted)", plan.baselineSampled, windowStart)
	}
	if len(plan.families) > 0 {
		summary += fmt.Sprintf("; the lines of the client families %s (agent/language) that stood out were pulled across the whole range (%s)",
			strings.Join(plan.families, ", "), FamiliesFile)
	}
	records[0].Note += "; " + pushdownMark + summary
	for _, r := range records {
		f.record(r)
	}
	f.note(loki.Source, sources.SeverityInfo, fmt.Sprintf(
		"%sthe window is longer than pushdown_after (%s), so %s: minutes standing out at %gx their usual count, plus %s around them; %s has every minute's count",
		pushdownMark, f.cfg.PushdownAfterDuration(), summary, factor, f.cfg.Pushdown.margin(), MinuteCountsFile))
	return plan, true
}

// minuteBytes is what a full pull of the counted minutes would pull, in
// total and per minute (lines: their counts), and how that was known
// (bundle.BytesFrom*): each minute's lines times the mean line of Loki's
// index statistics, which read no line, or, where the index knows no line
// of the range (an old Loki, lines still in the ingesters), Loki's
// bytes_over_time per minute, a pass over the range (fullBytes). -1 and
// nil when neither can be had.
func (f *fetcher) minuteBytes(ctx context.Context, c *loki.Client, query string, lines []int64, cost *Progress) (int64, []float64, string) {
	selector := f.cfg.Loki.Selector
	st, err := c.IndexStats(ctx, selector, f.start, f.to)
	cost.Requests += int64(st.Requests)
	cost.WireBytes += st.WireBytes
	perLine, ok := st.BytesPerLine()
	if err == nil && ok {
		perMinute := make([]float64, len(lines))
		var total float64
		for i, n := range lines {
			perMinute[i] = float64(n) * perLine
			total += perMinute[i]
		}
		f.record(bundle.Query{Source: loki.Source, Query: selector, From: f.start, To: f.to, Complete: true, Series: int(st.Streams),
			Note: fmt.Sprintf("Loki's index statistics (index/stats, no line read): %d streams, %d lines, %d bytes, %.1f bytes a line, which times each minute's lines are the bytes of the cost model, %d requests, %d response bytes",
				st.Streams, st.Entries, st.Bytes, perLine, st.Requests, st.WireBytes)})
		return int64(math.Round(total)), perMinute, bundle.BytesFromIndex
	}
	why := "its index knew no line of the range"
	if err != nil {
		why = err.Error()
	}
	f.note(loki.Source, sources.SeverityInfo, fmt.Sprintf("Loki's index statistics gave no bytes per line (%s), so the cost model's bytes are measured with bytes_over_time, a pass over the range", why))
	n, perMinute := f.fullBytes(ctx, c, query, len(lines), cost)
	return n, perMinute, bundle.BytesFromBytesOverTime
}

// minuteTotals is query's lines per minute of [from, to) (widened to whole
// minutes) as one series: sum(count_over_time) in one metric query, where
// loki.MinuteCounts first lists the streams to count each apart, a request
// the pushdown, which sums them, does not need.
func minuteTotals(ctx context.Context, c *loki.Client, query string, from, to time.Time) (loki.MinuteCounts, error) {
	q := "sum(count_over_time(" + query + " " + loki.MinuteRange + "))"
	mv, err := c.MinuteValues(ctx, q, from, to)
	mc := loki.MinuteCounts{Query: q, From: mv.From, To: mv.To, Requests: mv.Requests, WireBytes: mv.WireBytes}
	if err != nil {
		return mc, err
	}
	sm := loki.StreamMinutes{Counts: make([]int64, mc.Minutes())}
	for _, s := range mv.Series {
		for i, v := range s.Values {
			sm.Counts[i] += int64(math.Round(v))
		}
	}
	mc.Streams = []loki.StreamMinutes{sm}
	return mc, nil
}

func writeFileWith(path string, write func(io.Writer) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("fetch: %w", err)
	}
	if err := write(fh); err != nil {
		fh.Close()
		return fmt.Errorf("fetch: writing %s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("fetch: writing %s: %w", path, err)
	}
	return nil
}

// pushdownMark starts the sentence that says what a pushdown pulled, in the
// minute counts' record of bundle.yaml and in the notes.
const pushdownMark = "pushdown: "

// ManifestNotes turns what bundle.yaml says into data-quality notes, so an
// analysis of a fetched bundle reports what its fetch could not get: an
// "error" for each record that failed or was not fetched (decided by
// bundle.Query.HasFailed), a "warning" for each other incomplete record, and
// an "info" note for what a pushdown did not pull and for each of Loki's limits the fetch followed. Bundles written by other means (simulate, by hand) give none.
func ManifestNotes(m bundle.Manifest) []sources.QualityNote {
	var out []sources.QualityNote
	for _, q := range m.Queries {
		if !q.Complete {
			sev := sources.SeverityWarning
			if q.HasFailed() {
				sev = sources.SeverityError
			}
			what := q.Query
			if what == "" {
				// The note is shown after its source: naming the source
				// again would read "loki: loki [...".
				what = "the fetch"
			}
			msg := fmt.Sprintf("%s [%s, %s) is incomplete", what, q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
			if q.File != "" {
				msg += " in " + q.File
			}
			if q.Note != "" {
				msg += ": " + q.Note
			}
			out = append(out, sources.QualityNote{Source: q.Source, Severity: sev, Message: msg})
			continue
		}
		if q.File == MinuteCountsFile {
			if i := strings.Index(q.Note, pushdownMark); i >= 0 {
				out = append(out, sources.QualityNote{Source: q.Source, Severity: sources.SeverityInfo,
					Message: strings.TrimPrefix(q.Note[i:], pushdownMark) + "; every minute's count is in " + MinuteCountsFile})
			}
		}
	}
	for _, l := range m.LokiLimitsLearned {
		out = append(out, sources.QualityNote{Source: loki.Source, Severity: sources.SeverityInfo, Message: "Loki's limits were followed: " + l})
	}
	if pd := m.Pushdown; pd != nil {
		for i, p := range pd.SecondPasses {
			if p.Failed != "" {
				out = append(out, sources.QualityNote{Source: loki.Source, Severity: sources.SeverityWarning, Message: fmt.Sprintf(
					"pushdown's second pass %d failed, so %d minutes next to where something starts or ends stay counted, not read: a start there may be late by up to %s: %s",
					i+1, p.Minutes, secondPassReach, p.Failed)})
				continue
			}
			out = append(out, sources.QualityNote{Source: loki.Source, Severity: sources.SeverityInfo, Message: fmt.Sprintf(
				"pushdown's second pass %d pulled %d minutes next to where a finding or failing stretch starts or ends (%d lines, %d requests; at most %d passes of %d minutes)",
				i+1, p.Minutes, p.Lines, p.Requests, pd.SecondPassMaxPasses, pd.SecondPassMaxMinutes)})
		}
	}
	return out
}

// ---- Prometheus ----

func (f *fetcher) prometheus(ctx context.Context) error {
	p := f.cfg.Prometheus
	c, err := prometheus.New(p.clientConfig())
	if err != nil {
		f.failed(prometheus.Source, "client", err)
		return nil
	}
	sels := p.SelectorList()
	chunks := int((f.to.Sub(f.start) + prometheus.RawChunk - 1) / prometheus.RawChunk)
	mq := &meteredQuerier{c: c, f: f, p: Progress{Source: prometheus.Source, Phase: "series", Unit: "series",
		Total: len(sels) * max(chunks, 1), Started: time.Now()}}
	f.progress(mq.p)
	out, err := createGz(filepath.Join(f.dir, PrometheusFile))
	if err != nil {
		return err
	}
	w := metrics.NewWriter(out)
	recs, xerr := prometheus.Export(ctx, mq, sels, f.start, f.to, 0, w)
	werr := w.Close()
	if err := out.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return werr
	}
	var series int
	for _, r := range recs {
		r.File = PrometheusFile
		series += r.Series
		if !r.Complete {
			sev := sources.SeverityWarning
			if r.HasFailed() {
				sev = sources.SeverityError
			}
			f.note(prometheus.Source, sev, fmt.Sprintf("%s [%s, %s) incomplete: %s", r.Query, r.From.Format(time.RFC3339), r.To.Format(time.RFC3339), r.Note))
		}
		f.record(r)
	}
	if xerr != nil && len(recs) == 0 {
		f.failed(prometheus.Source, "export", xerr)
	}
	if series == 0 && xerr == nil {
		f.note(prometheus.Source, sources.SeverityWarning, "no series matched the selectors in the window: php-fpm, Caddy and node metrics are unknown")
	}
	mq.p.Count, mq.p.Finished = int64(series), true
	f.progress(mq.p)
	return nil
}

// meteredQuerier counts the queries of an export for progress reports. It
// has the methods prometheus.Export looks for, so the export keeps the
// server's warnings.
type meteredQuerier struct {
	c      *prometheus.Client
	f      *fetcher
	p      Progress
	series map[string]bool
}

func (m *meteredQuerier) done(r prometheus.Result) {
	if m.series == nil {
		m.series = map[string]bool{}
	}
	for _, s := range r.Series {
		m.series[fmt.Sprint(s.Labels)] = true
	}
	m.p.Done++
	m.p.Requests++
	m.p.Count = int64(len(m.series))
	m.f.progress(m.p)
}

func (m *meteredQuerier) RangeQuery(ctx context.Context, q string, start, end time.Time, step time.Duration) (prometheus.Result, error) {
	r, err := m.c.RangeQuery(ctx, q, start, end, step)
	m.done(r)
	return r, err
}

func (m *meteredQuerier) InstantQuery(ctx context.Context, q string, at time.Time) (prometheus.Result, error) {
	r, err := m.c.InstantQuery(ctx, q, at)
	m.done(r)
	return r, err
}

func (m *meteredQuerier) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) ([]metrics.Series, error) {
	r, err := m.RangeQuery(ctx, q, start, end, step)
	return r.Series, err
}

func (m *meteredQuerier) Query(ctx context.Context, q string, at time.Time) ([]metrics.Series, error) {
	r, err := m.InstantQuery(ctx, q, at)
	return r.Series, err
}

// ---- CloudWatch ----

func (f *fetcher) cloudwatch(ctx context.Context) error {
	p := Progress{Source: cloudwatch.Source, Phase: "metrics", Unit: "datapoints", Started: time.Now()}
	f.progress(p)
	c, err := cloudwatch.New(ctx, f.cfg.CloudWatch.clientConfig())
	if err != nil {
		f.failed(cloudwatch.Source, "client", err)
		return nil
	}
	out, err := createGz(filepath.Join(f.dir, CloudWatchFile))
	if err != nil {
		return err
	}
	w := metrics.NewWriter(out)
	results, ferr := c.Fetch(ctx, f.start, f.to, w)
	werr := w.Close()
	if err := out.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return werr
	}
	for _, r := range results {
		rec := r.Record()
		rec.File = CloudWatchFile
		f.record(rec)
		p.Count += int64(r.Datapoints)
	}
	notes := cloudwatch.Notes(results)
	for i := range notes {
		if ferr != nil { // a call failed, not only a partial answer
			notes[i].Severity = sources.SeverityError
		}
	}
	f.notes = append(f.notes, notes...)
	if ferr != nil && len(results) == 0 {
		f.failed(cloudwatch.Source, "GetMetricData", ferr)
	}
	p.Finished = true
	f.progress(p)
	return nil
}

// ---- changes ----

// changes copies the change logs into changes/ and records the
// configuration repository's path.
func (f *fetcher) changes() error {
	ch := f.cfg.Changes
	if ch.ConfigRepo != "" {
		abs, err := filepath.Abs(ch.ConfigRepo)
		if err != nil {
			abs = ch.ConfigRepo
		}
		f.manifest.ConfigRepo = abs
		f.record(bundle.Query{Source: SourceChanges, Query: "git repository " + abs, From: f.start, To: f.to, Complete: true,
			Note: "read in place by analyze (not copied into the bundle)"})
	}
	used := map[string]bool{}
	for i, src := range ch.Files {
		name := filepath.Base(src)
		if !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml") {
			name += ".yaml"
		}
		if used[name] {
			name = strconv.Itoa(i) + "-" + name
		}
		used[name] = true
		rel := filepath.Join(bundle.ChangesDir, name)
		data, err := os.ReadFile(src)
		if err != nil {
			f.note(SourceChanges, sources.SeverityError, fmt.Sprintf("change log %s: %v", src, err))
			f.record(bundle.Query{Source: SourceChanges, Query: "copy of " + src, From: f.start, To: f.to, File: rel, Failed: true, Note: "failed: " + err.Error()})
			continue
		}
		if err := os.WriteFile(filepath.Join(f.dir, rel), data, 0o644); err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		f.record(bundle.Query{Source: SourceChanges, Query: "copy of " + src, From: f.start, To: f.to, File: rel,
			Bytes: int64(len(data)), Complete: true})
	}
	return nil
}
