package report

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/configchange"
	"github.com/aftermath-forensics/aftermath/rules/rule"
	"github.com/aftermath-forensics/aftermath/sources"
)

// view is what the Markdown and HTML templates render: every text already in
// the target language, plain (unescaped); each template escapes for its format.
type view struct {
	Lang  string
	L     map[string]string
	Title string
	// Coverage are the first lines: what part of the window each source
	// leaves unknown (none when the evidence is complete).
	Coverage []string
	Summary  string
	TZ       string

	Impact   impactView
	Timeline []rowView
	Causes   []causeView
	// CauseNote is set when no finding explains the outage (only symptoms).
	CauseNote string
	// RuledOut explains the changes the numbers clear; Mitigations those
	// that lowered the risk.
	RuledOut    []string
	Mitigations []string

	Rules []ruleView
	// Placement says where the zones go in the configuration's Caddyfile,
	// or why they were not placed there ("" without a rule).
	Placement string
	Recs      []recView
	// NoFix is set when no rule was generated.
	NoFix string

	Remains []string

	Sources     []string
	Queries     []queryView
	Leaves      []string
	Checks      []checkView
	Findings    []findingView
	DataQuality []string

	Charts []chartView
}

type impactView struct {
	Window, Period                                           string
	Requests, Failed, Late, PHPRequests, PHPFailed, PHPShare string
	Statuses                                                 []statusView
	Caveats                                                  []string
}

type statusView struct{ Code, Count, Proxy string }

// rowView is one timeline row: the moments of one local minute.
type rowView struct {
	Index    int
	Time     string
	Text     string
	Findings string
	IDs      []string
	at       time.Time
}

type causeView struct {
	Rank                      int
	Role, Finding, Kind, Text string
}

type ruleView struct {
	Name, Finding, Why, Caddyfile, Fence string
	Backtest                             [][2]string
}

type recView struct{ Target, Key, Value, Why string }

type queryView struct{ Name, Query, Agg string }

type checkView struct{ Name, Outcome, Reason, Findings string }

type findingView struct{ ID, Kind, When, Confidence, Summary string }

// wordTable reads a table of words said by the catalog (the "labels" and
// "chart.words" messages): one "key = word" a line, blank lines skipped. The
// words are the reader's and live beside the sentences in each language's
// file; Go keeps only the keys. A line without " = " is the printer's error.
func wordTable(p printer, text string) map[string]string {
	words := map[string]string{}
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		if strings.TrimSpace(line) == "" {
			continue
		}
		key, word, ok := strings.Cut(line, " = ")
		if !ok || strings.TrimSpace(key) == "" {
			p.fail(fmt.Errorf("prose: table line %q: want \"key = word\"", line))
			continue
		}
		words[strings.TrimSpace(key)] = word
	}
	return words
}

// newView prepares r for rendering in lang.
func newView(r *Report, lang string) (*view, error) {
	if err := langError(lang); err != nil {
		return nil, err
	}
	if !slices.Contains(r.languages(), lang) {
		return nil, fmt.Errorf("report: language %q: the report's texts were said in %s only (report.Build's langs)", lang, strings.Join(r.languages(), ", "))
	}
	loc, err := r.location()
	if err != nil {
		return nil, err
	}
	day := r.incidentDay()
	p := newPrinter(lang, loc, day)
	v := &view{Lang: lang, L: wordTable(p, p.say("labels", nil)), TZ: r.Window.TZ}
	if v.TZ == "" {
		v.TZ = "UTC"
	}
	v.Title = title(p, r)
	v.Coverage = coverageLines(p, r)
	v.Summary = summary(p, r)
	v.Impact = impactOf(p, r)
	v.Timeline = rows(p, r)
	for _, c := range r.Causes {
		v.Causes = append(v.Causes, causeView{Rank: c.Rank, Role: v.L["role_"+string(c.Role)], Finding: c.Finding, Kind: string(c.Kind),
			Text: c.text(lang) + estimatedMark(p, r.finding(c.Finding))})
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		switch roleOf(f) {
		case detect.RoleRuledOut:
			v.RuledOut = append(v.RuledOut, explainNotCause(p, r, f))
		case detect.RoleMitigation:
			v.Mitigations = append(v.Mitigations, explainNotCause(p, r, f))
		}
	}
	if !hasCause(r.Causes) {
		v.CauseNote = p.say("causes.none", nil)
	}
	for _, rl := range r.Rules {
		v.Rules = append(v.Rules, ruleOf(p, v.L, rl))
	}
	if r.RulesPlacement != nil && len(r.Rules) > 0 {
		if r.RulesPlacement.NotPlaced != "" {
			// The reason, when a catalog said it, in the report's
			// language; a Caddyfile's error reads as written.
			reason := ""
			if c, _, _ := r.RulesPlacement.NotPlacedText.Message(); c != nil {
				reason = p.text(r.RulesPlacement.NotPlacedText, r.RulesPlacement.NotPlaced)
			}
			v.Placement = p.say("rules.not_placed", struct {
				*RulesPlacement
				Reason string
			}{r.RulesPlacement, reason})
		} else {
			v.Placement = p.say("rules.placed", r.RulesPlacement)
		}
	}
	for _, rc := range r.Recommendations {
		v.Recs = append(v.Recs, recView{Target: rc.Target, Key: rc.Key, Value: p.text(rc.ValueText, rc.Value), Why: p.text(rc.WhyText, rc.Why)})
	}
	if len(r.Rules) == 0 {
		v.NoFix = p.say("fix.none", nil)
		if len(r.Recommendations) == 0 {
			v.NoFix = p.say("fix.none_no_advice", nil)
		}
	}
	v.Remains = remains(p, r)
	v.Sources, v.Leaves = provenance(p, r)
	for _, s := range r.Evidence.Series {
		v.Queries = append(v.Queries, queryView{Name: s.Name, Query: s.Query, Agg: s.Agg})
	}
	for _, c := range r.Checks {
		v.Checks = append(v.Checks, checkView{Name: string(c.Name), Outcome: orDash(v.L[string(c.Outcome)]), Reason: p.text(c.ReasonText, c.Reason), Findings: strings.Join(c.Findings, ", ")})
	}
	for _, f := range r.Findings {
		when := p.stamp(f.Start)
		if f.End.After(f.Start) {
			when += "–" + p.stamp(f.End)
		}
		v.Findings = append(v.Findings, findingView{ID: f.ID, Kind: string(f.Kind), When: when,
			Confidence: strconv.FormatFloat(f.Confidence, 'f', 2, 64), Summary: p.text(f.SummaryText, f.Summary) + estimatedMark(p, &f)})
	}
	for _, n := range r.DataQuality {
		v.DataQuality = append(v.DataQuality, severityWord(v.L, n.Severity)+" ("+n.Source+"): "+p.text(n.Text, n.Message))
	}
	if err := p.err(); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	scrub(reflect.ValueOf(v).Elem())
	return v, nil
}

// scrub removes control and format characters from every string of a view,
// whatever renders it: escaping keeps them from being markup, but a bidi
// override would still reorder what a reader sees, and a line break in a cell
// means nothing to a reader either. Line breaks become spaces; the Caddyfile
// snippet keeps its lines.
func scrub(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(cleanText(v.String()))
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() && f.Name != "Caddyfile" {
				scrub(v.Field(i))
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			scrub(v.Index(i))
		}
	case reflect.Ptr:
		if !v.IsNil() {
			scrub(v.Elem())
		}
	}
}

// cleanText turns line breaks and tabs into spaces and drops other control
// and format characters.
func cleanText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, s)
}

func hasCause(cs []Cause) bool {
	for _, c := range cs {
		if c.Role != detect.RoleSymptom {
			return true
		}
	}
	return false
}

func title(p printer, r *Report) string {
	failing := detect.First(r.Findings, detect.KindUpstreamErrors) != nil
	from, to := r.Impact.Start, r.Impact.End
	if !failing {
		from, to = r.Window.From, r.Window.To
	}
	// An edge the access log cannot show is not put in the title as if it
	// were the outage's: it is unknown, or the metrics' bound, said so.
	im := r.Impact
	var startAt, endAt time.Time
	startOpen, endOpen := failing && im.StartBound != nil, failing && im.EndBound != nil
	startBound, endBound := startOpen && im.StartBound.Bounded(), endOpen && im.EndBound.Bounded() && !im.EndBound.Ongoing
	if startBound {
		startAt = im.StartBound.At
	}
	if endBound {
		endAt = im.EndBound.At
	}
	return p.say("title", struct {
		Failing              bool
		Year                 int
		Day                  time.Time
		From, To             time.Time
		TZ                   string
		StartOpen, EndOpen   bool
		StartBound, EndBound bool
		StartAt, EndAt       time.Time
	}{failing, p.day.Year(), p.day, from, to, r.Window.TZ, startOpen, endOpen, startBound, endBound, startAt, endAt})
}

// summary is the opening paragraph, modelled on the reference postmortem: what
// failed and how much, what triggered it, what let it, how it recovered.
func summary(p printer, r *Report) string {
	im := r.Impact
	errs := detect.First(r.Findings, detect.KindUpstreamErrors)
	// Only a crawler judged the trigger (in time and weight) is told as
	// what took the workers; one judged context is in the timeline.
	var crawler *detect.Finding
	for i := range r.Findings {
		if f := &r.Findings[i]; f.Kind == detect.KindCrawlerBurst && roleOf(f) == detect.RoleTrigger {
			crawler = f
			break
		}
	}
	sat := detect.First(r.Findings, detect.KindWorkerSaturation)
	health := detect.First(r.Findings, detect.KindHealthcheckStarved)
	var change *detect.Finding
	for i := range r.Findings {
		if f := &r.Findings[i]; f.Kind == detect.KindConfigChange && (roleOf(f) == detect.RoleEnabler || roleOf(f) == detect.RoleTrigger) {
			change = f
			break
		}
	}
	var s []string

	// What failed.
	window := struct {
		From, To         time.Time
		Requests, Failed int
	}{r.Window.From, r.Window.To, im.Requests, im.FailedRequests}
	switch {
	case errs != nil && (im.StartBound != nil || im.EndBound != nil):
		s = append(s, p.say("summary.failed_open", struct {
			Impact
			StartOpen, EndOpen, EndGap bool
		}{im, im.StartBound != nil, im.EndBound != nil, im.EndBound != nil && im.EndBound.Unlogged.Kind == sources.StretchGap}))
	case errs != nil:
		s = append(s, p.say("summary.failed", im))
	case coverageIncomplete(r, "access"):
		s = append(s, p.say("summary.access_incomplete", window))
	case im.Baseline != nil && !im.Baseline.Usable():
		// Nothing usual was measured: "no more than usual" would compare
		// the window with itself.
		s = append(s, p.say("summary.no_baseline", window))
	default:
		s = append(s, p.say("summary.usual", window))
	}
	if errs != nil {
		s = append(s, unknownMinutes(p, r)...)
	}
	if errs != nil && len(im.OtherStretches) > 0 {
		// Separate stretches stay separate: the worst leads, the others are named.
		var parts []string
		for _, o := range im.OtherStretches {
			parts = append(parts, p.say("summary.stretch", o))
		}
		s = append(s, p.say("summary.other_stretches", parts))
	}
	if errs != nil {
		if b := statusBreakdown(p, im.StatusCounts, im.LateRequests); b != "" {
			s = append(s, b)
		}
	}
	// What triggered it.
	if crawler != nil {
		var paths []string
		if crawler.Fingerprint != nil {
			paths = crawler.Fingerprint.Paths
		}
		if len(paths) > 3 {
			paths = paths[:3]
		}
		cf := detect.FactsOf[detect.CrawlerBurstFacts](crawler)
		// "Took every worker" is said of a crawler that did most of the
		// PHP work added at the onset; one with a smaller (still material)
		// share is said to have loaded PHP with that share.
		share, weighed := cf.PHPAddedShare.V, cf.PHPAddedShare.OK
		took := sat != nil && (!weighed || share >= 0.5)
		workers := 0.0
		if took {
			workers = float64(detect.FactsOf[detect.WorkerSaturationFacts](sat).Workers)
		}
		// The headline counts hosts (an IPv6 /64 as one); a report.json
		// written before clients were counted has addresses only.
		clients := cf.Clients
		if clients == 0 {
			clients = cf.DistinctIPs
		}
		s = append(s, p.say("summary.crawler", struct {
			Spread, TookAll, Weighed     bool
			IPs, Clients, Workers, Share float64
			Paths                        []string
		}{cf.Spread, took, weighed, float64(cf.DistinctIPs), float64(clients), workers, share, paths}))
	} else if sat != nil {
		s = append(s, p.say("summary.saturated", float64(detect.FactsOf[detect.WorkerSaturationFacts](sat).Workers)))
	}
	if crawler == nil {
		s = append(s, contextRises(p, r)...)
	}
	if u := r.unread; u != nil {
		// A cause looked for in lines that were never read is not
		// absent: the reader is told so where the cause would be.
		s = append(s, p.say("summary.unread", u.Said()))
	}
	// What let it turn into an outage: the change that enabled it, told
	// with the health check it starved when there is one.
	var why struct {
		Change        bool
		Key, Old, New string
		Grew          int
		At            time.Time
		Wait, Timeout float64
		Made503       bool
	}
	if change != nil && change.Change != nil {
		c := change.Change
		why.Change, why.Key, why.Old, why.New, why.Grew, why.At = true, orDash(c.Key), configchange.SettingValue(c.Old), configchange.SettingValue(c.New), direction(detect.FactsOf[configchange.ConfigChangeFacts](change)), c.Time
	}
	if health != nil {
		hf := detect.FactsOf[detect.HealthcheckFacts](health)
		why.Wait, why.Timeout = max(hf.EstQueueWaitS.V, 0), max(hf.HealthTimeoutS.V, 0)
		why.Made503 = hf.Proxy503.V > 0
		s = append(s, p.say("summary.health", why))
	} else if why.Change {
		s = append(s, p.say("summary.change", why))
	}
	// How it ended. A failing stretch that runs to the window's end did
	// not end as far as the evidence shows; one that runs into minutes the
	// access log has no lines for ended where nobody saw.
	if errs != nil && im.EndBound != nil {
		s = append(s, p.say("summary.end_unknown", edgeText(im.EndBound, r.Window.To)))
	} else if errs != nil && !errs.End.Before(r.Window.To.Truncate(time.Minute)) {
		s = append(s, p.say("summary.still_failing", r.Window.To))
	} else if errs != nil {
		died := crawler != nil && crawler.End.Sub(errs.End).Abs() <= 5*time.Minute
		s = append(s, p.say("summary.recovered", struct {
			At   time.Time
			Died bool
		}{errs.End, died}))
	}
	if len(r.Rules) > 0 {
		s = append(s, p.say("summary.rule", r.Rules[0]))
	}
	return strings.Join(s, " ")
}

// edgeData is what a sentence about an edge the access log cannot show
// reads: the stretch without lines, and what bounds it.
type edgeData struct {
	From, To, At, WindowTo time.Time
	Missing                time.Duration
	Gap, Bounded, Ongoing  bool
}

func edgeText(e *detect.Edge, windowTo time.Time) edgeData {
	u := e.Unlogged
	return edgeData{From: u.From, To: u.To, At: e.At, WindowTo: windowTo, Missing: u.To.Sub(u.From),
		Gap: u.Kind == sources.StretchGap, Bounded: e.Bounded(), Ongoing: e.Ongoing}
}

// unknownMinutes says where the failing stretch's start is unknown and
// which stretches inside it the access log has no lines for: its counts
// leave those minutes out, and a gap there is no pause of the failures.
func unknownMinutes(p printer, r *Report) []string {
	var out []string
	if e := r.Impact.StartBound; e != nil {
		out = append(out, p.say("summary.start_unknown", edgeText(e, r.Window.To)))
	}
	for _, u := range r.Impact.Unlogged {
		out = append(out, p.say("summary.unlogged_inside", edgeText(&detect.Edge{Unlogged: u}, r.Window.To)))
	}
	return out
}

// direction says which way a change moved its setting, from the values the
// config_change detector read (an absent one is the setting's default): 1
// when the new value is larger, -1 smaller, 0 when equal or either is not a
// number.
func direction(cf *configchange.ConfigChangeFacts) int {
	switch {
	case !cf.OldValue.OK || !cf.NewValue.OK || cf.OldValue.V == cf.NewValue.V:
		return 0
	case cf.NewValue.V > cf.OldValue.V:
		return 1
	}
	return -1
}

// statusBreakdown: "8,001 responses were 503 and 1,027 were 502."
func statusBreakdown(p printer, counts map[string]int, late int) string {
	type sc struct {
		code string
		n    int
	}
	var all []sc
	for c, n := range counts {
		if failedStatus(c) && n > 0 {
			all = append(all, sc{c, n})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].code < all[j].code
	})
	if len(all) > 4 {
		all = all[:4]
	}
	var parts []string
	for i, x := range all {
		parts = append(parts, p.say("status.count", struct {
			Code  string
			N     int
			First bool
		}{x.code, x.n, i == 0}))
	}
	if late > 0 {
		parts = append(parts, p.say("status.late", late))
	}
	if len(parts) == 0 {
		return ""
	}
	return p.say("status.breakdown", parts)
}

func impactOf(p printer, r *Report) impactView {
	im := r.Impact
	v := impactView{
		Window:      p.stamp(r.Window.From) + " – " + p.stamp(r.Window.To),
		Requests:    p.i(im.Requests),
		Failed:      p.i(im.FailedRequests),
		Late:        p.i(im.LateRequests),
		PHPRequests: p.i(im.PHPRequests),
		PHPFailed:   p.i(im.PHPFailed) + " (" + p.pct(im.PHPFailedShare) + ")",
	}
	if im.Requests > 0 {
		v.Failed += " (" + p.pct(float64(im.FailedRequests)/float64(im.Requests)) + ")"
	}
	if !p.sameDay(r.Window.From) {
		v.Window = r.Window.From.In(p.loc).Format("2006-01-02 15:04") + " – " + p.stamp(r.Window.To)
	}
	v.Period = p.stamp(im.Start) + " – " + p.stamp(im.End)
	if im.StartBound != nil || im.EndBound != nil {
		v.Period += " " + p.say("impact.period_open", struct{ StartOpen, EndOpen bool }{im.StartBound != nil, im.EndBound != nil})
	}
	errs := detect.First(r.Findings, detect.KindUpstreamErrors)
	codes := make([]string, 0, len(im.StatusCounts))
	for c := range im.StatusCounts {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	for _, c := range codes {
		sv := statusView{Code: c, Count: p.i(im.StatusCounts[c])}
		if errs != nil {
			code, _ := strconv.Atoi(c)
			if n, ok := detect.FactsOf[detect.UpstreamErrorsFacts](errs).Proxy[code]; ok {
				sv.Proxy = p.n(float64(n))
			}
		}
		v.Statuses = append(v.Statuses, sv)
	}
	for _, c := range im.caveats {
		v.Caveats = append(v.Caveats, c.in(p.lang))
	}
	if im.caveats == nil {
		v.Caveats = append(v.Caveats, im.Caveats...)
	}
	return v
}

// rows groups the moments by local minute, as the reference's table does.
func rows(p printer, r *Report) []rowView {
	var out []rowView
	sep := p.say("timeline.join", nil)
	for _, m := range r.Timeline {
		stamp := p.stamp(m.Time)
		if n := len(out); n > 0 && out[n-1].Time == stamp {
			out[n-1].Text += sep + m.text(p.lang)
			if !slices.Contains(out[n-1].IDs, m.Finding) {
				out[n-1].IDs = append(out[n-1].IDs, m.Finding)
				out[n-1].Findings = strings.Join(out[n-1].IDs, ", ")
			}
			continue
		}
		out = append(out, rowView{Index: len(out) + 1, Time: stamp, Text: m.text(p.lang), Findings: m.Finding, IDs: []string{m.Finding}, at: m.Time})
	}
	return out
}

func ruleOf(p printer, l map[string]string, rl rule.Rule) ruleView {
	bt := rl.Backtest
	fence := "```"
	for strings.Contains(rl.Caddyfile, fence) {
		fence += "`"
	}
	of := func(n, total int) string {
		return p.say("backtest.of", struct{ N, Total int }{n, total})
	}
	// The block opens with what deploying it takes, as rules.caddy does
	// (one source: rule.DeployStepsIn, in the report's language): pasted
	// alone, it still says it needs caddy-ratelimit and where it goes.
	var head strings.Builder
	for _, l := range rule.DeployStepsIn(p.lang) {
		head.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
	v := ruleView{Name: rl.Name, Finding: rl.Finding, Why: p.text(rl.WhyText, rl.Why), Caddyfile: head.String() + rl.Caddyfile, Fence: fence}
	crawler, others := backtestShares(p, bt)
	v.Backtest = [][2]string{
		{l["bt_crawler"], crawler},
		{l["bt_php"], p.secs(bt.CrawlerPHPSecondsSaved)},
		{l["bt_readers"], of(bt.FingerprintReaderRefused, bt.FingerprintReaderRequests)},
		{l["bt_other"], others},
		{l["bt_logged_in"], of(bt.LoggedInRefused, bt.LoggedInRequests)},
		{l["bt_baseline"], of(bt.BaselineRefused, bt.BaselineRequests)},
	}
	if !bt.FirstRefusal.IsZero() {
		v.Backtest = append(v.Backtest, [2]string{l["bt_first"], p.stamp(bt.FirstRefusal)})
	}
	return v
}

// backtestShares says what a rule refused of its crawler and of the other
// logged-out requests, each as "N of M (share)"; a share that misses the
// goal the rules aim at says so beside it (the rule is proposed anyway, and
// its Why says why).
func backtestShares(p printer, bt rule.Backtest) (crawler, others string) {
	of := func(n, total int) string {
		return p.say("backtest.of", struct{ N, Total int }{n, total})
	}
	crawler = of(bt.CrawlerRefused, bt.CrawlerRequests) + " (" + p.pct(bt.CrawlerRefusedShare) + ")"
	if bt.CrawlerGoalMissed {
		crawler += ", " + p.say("backtest.crawler_goal_missed", bt.CrawlerGoal)
	}
	others = of(bt.OtherLoggedOutRefused, bt.OtherLoggedOutRequests) + " (" + p.pct(bt.OtherLoggedOutRefusedShare) + ")"
	if bt.OtherLoggedOutGoalMissed {
		others += ", " + p.say("backtest.others_goal_missed", bt.OtherLoggedOutGoal)
	}
	return crawler, others
}

// remains lists what the fix leaves open, from the backtests, the findings
// without a remedy and what could not be checked.
// causingCrawler reports whether a crawler_burst finding is among the
// causes (any role but context).
func causingCrawler(fs []detect.Finding) bool {
	for i := range fs {
		if fs[i].Kind == detect.KindCrawlerBurst && fs[i].Role != detect.RoleContext {
			return true
		}
	}
	return false
}

func remains(p printer, r *Report) []string {
	var out []string
	for _, rl := range r.Rules {
		out = append(out, p.say("remains.rule", rl))
	}
	if len(r.Rules) == 0 {
		// A crawler that was context, not a cause, gets no rule on purpose;
		// only a causing crawler left without one can do it again.
		switch c := detect.First(r.Findings, detect.KindCrawlerBurst); {
		case causingCrawler(r.Findings):
			out = append(out, p.say("remains.no_rule", nil))
		case c != nil:
			out = append(out, p.say("remains.crawler_context", c.ID))
		}
	}
	if hc := detect.First(r.Findings, detect.KindHealthcheckStarved); hc != nil && !advises(r, "backlog", "health") {
		out = append(out, p.say("remains.health_queue", detect.FactsOf[detect.HealthcheckFacts](hc).Backlog.V))
	}
	for _, c := range r.Checks {
		if c.Outcome == detect.OutcomeCouldNotRun {
			out = append(out, p.say("remains.not_checked", c))
		}
	}
	if len(out) == 0 {
		out = append(out, p.say("remains.none", nil))
	}
	return out
}

// advises reports whether a recommendation touches a key containing any of words.
func advises(r *Report, words ...string) bool {
	for _, rc := range r.Recommendations {
		for _, w := range words {
			if strings.Contains(rc.Key, w) {
				return true
			}
		}
	}
	return false
}

// provenance says which inputs the numbers come from and what they leave out.
func provenance(p printer, r *Report) (src, leaves []string) {
	e := r.Evidence
	if e.AccessFiles > 0 || e.Lines > 0 {
		src = append(src, p.say("sources.access", struct {
			Files, Skipped, Requests int
			Lines                    float64
		}{e.AccessFiles, e.SkippedLines, r.Impact.Requests, float64(e.Lines)}))
	}
	if e.MetricFiles > 0 || len(e.Series) > 0 {
		src = append(src, p.say("sources.metrics", struct {
			Files   int
			Samples float64
		}{e.MetricFiles, float64(e.MetricSamples)}))
	}
	if len(r.Changes) > 0 {
		src = append(src, p.say("sources.changes", len(r.Changes)))
	}
	if len(src) == 0 {
		src = append(src, p.say("sources.none", nil))
	}
	leaves = append(leaves, p.say("leaves.unlogged", nil), p.say("leaves.no_499", nil), p.say("leaves.health_checks", nil))
	if len(e.Series) > 0 {
		leaves = append(leaves, p.say("leaves.metrics_minute", nil))
	}
	return src, leaves
}

// contextRises says, of each client rise judged context, why it is not the
// trigger, so that a reader who sees it in the timeline does not blame it.
func contextRises(p printer, r *Report) []string {
	var out []string
	for i := range r.Findings {
		f := &r.Findings[i]
		if f.Kind != detect.KindCrawlerBurst || roleOf(f) != detect.RoleContext {
			continue
		}
		cf := detect.FactsOf[detect.CrawlerBurstFacts](f)
		lead := time.Duration(cf.OnsetLeadS.V * float64(time.Second))
		share := cf.PHPAddedShare.V
		out = append(out, p.say("summary.context_rise", struct {
			Crowd string
			Start time.Time
			Early bool
			Lead  time.Duration
			Share float64
		}{crowd(p, f), f.Start, lead > detect.TriggerLead, lead, share}))
	}
	return out
}

// severityWord is a data-quality note's severity in the words of a table
// (labels, terminal.words): "info", "정보"; as written when it has none.
func severityWord(words map[string]string, s sources.Severity) string {
	if w, ok := words["severity_"+string(s)]; ok {
		return w
	}
	return string(s)
}
