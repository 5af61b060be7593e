package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// The accuracy score: how a report.json compares with the truth.json of the
// simulated bundle it was made from. `make accuracy` (accuracy_test.go, build
// tag accuracy) scores every scenario over several seeds; the scoring itself
// lives here, untagged, so that `go test` compiles and checks it.

// accReport is the part of report.json the score reads. It is decoded
// loosely (unknown fields ignored), so the score keeps working while the
// report grows.
type accReport struct {
	Impact struct {
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
		// Onset is set when the report found a failing stretch (its worst
		// incident's); without one, Start and End are the window's and
		// FailedRequests the stray failures of the whole window.
		Onset          time.Time `json:"onset"`
		FailedRequests int       `json:"failed_requests"`
	} `json:"impact"`
	Findings []accFinding `json:"findings"`
	Causes   []accCause   `json:"causes"`
	Rules    []struct {
		Backtest struct {
			CrawlerRequests        int `json:"crawler_requests"`
			CrawlerRefused         int `json:"crawler_refused"`
			OtherLoggedOutRequests int `json:"other_logged_out_requests"`
			OtherLoggedOutRefused  int `json:"other_logged_out_refused"`
		} `json:"backtest"`
	} `json:"rules"`
}

type accCause struct {
	Finding string `json:"finding"`
	Kind    string `json:"kind"`
	Rank    int    `json:"rank"`
	Role    string `json:"role"`
}

type accFingerprint struct {
	UserAgent string `json:"user_agent"`
	// UserAgents are a rotating actor's (one per family); the truth names
	// one of its agents, not necessarily the largest part's.
	UserAgents []string `json:"user_agents"`
}

type accChange struct {
	Key string `json:"key"`
	New string `json:"new"`
}

type accFinding struct {
	ID          string             `json:"id"`
	Kind        string             `json:"kind"`
	Role        string             `json:"role"`
	Start       time.Time          `json:"start"`
	Facts       map[string]float64 `json:"facts"`
	Fingerprint *accFingerprint    `json:"fingerprint"`
	Change      *accChange         `json:"change"`
}

// accScore is one run's row of the table.
type accScore struct {
	Scenario string
	Seed     int64
	// Missing are kinds the truth requires that the report lacks; Forbidden
	// are kinds the truth forbids that the report has.
	Missing, Forbidden []string
	// Trigger: what the truth names and what the report ranks first.
	WantTrigger, GotTrigger string
	TriggerRight            bool
	// OnsetErr is the trigger finding's start minus the truth's onset; nil
	// when the report has no finding of the truth's trigger.
	OnsetErr *time.Duration
	// StretchStartErr and StretchEndErr compare the report's impact with the
	// truth's worst failing stretch; nil when either side has none.
	StretchStartErr, StretchEndErr *time.Duration
	// StretchRight: both ends within accTolerance, or both sides without a
	// failing stretch.
	StretchRight bool
	// AddrErr is the crawler finding's distinct_ips against the crawler's
	// addresses in the window, relative; nil without a crawler or a
	// finding of it.
	AddrErr *float64
	// WantChange and ChangeRight: the enabling change the truth names ("" for
	// none) and whether the report's enablers say the same.
	WantChange  string
	ChangeRight bool
	// ActorRefused and OthersRefused are the rules' backtest: the share of
	// the crawlers' requests refused (every zone's, over every zone's
	// crawler) and of other logged-out requests (every zone's refusals over
	// the window's other requests); nil without a rule.
	ActorRefused, OthersRefused *float64
}

// accTolerance is the acceptance bound of issue 13 for onsets and the
// failing stretch.
const accTolerance = 2 * time.Minute

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// uaMatches: a fingerprint's user agent ("Chrome 121/129", a family and
// major versions) names the client whose full User-Agent is ua.
func uaMatches(family, ua string) bool {
	fields := strings.FieldsFunc(family, func(r rune) bool { return r == ' ' || r == '/' })
	if len(fields) == 0 {
		return false
	}
	name := strings.ToLower(fields[0])
	low := strings.ToLower(ua)
	versions := fields[1:]
	// A report names a browser as request.UAFamily does, and a family's
	// name is not always its product token (Edge writes Edg/125, Opera
	// OPR/, Chrome on iOS CriOS/, Safari Version/17.6): the truth's agent
	// named the same way must be the family with one of the versions.
	if fam, ver := request.SplitFamily(request.UAFamily(ua)); strings.EqualFold(fam, fields[0]) &&
		(len(versions) == 0 || slices.Contains(versions, ver)) {
		return true
	}
	if !strings.Contains(low, name) {
		return false
	}
	if len(versions) == 0 {
		return true
	}
	for _, v := range versions {
		if strings.Contains(low, name+"/"+strings.ToLower(v)) {
			return true
		}
	}
	return false
}

// score compares one report with its truth.
func score(scenario string, seed int64, tr simulate.Truth, rep accReport) accScore {
	s := accScore{Scenario: scenario, Seed: seed}
	found := map[string]bool{}
	byID := map[string]*accFinding{}
	for i := range rep.Findings {
		f := &rep.Findings[i]
		byID[f.ID] = f
		// A change the report names and rules out (or lists as a later fix)
		// is the right answer where the truth forbids blaming one.
		if f.Kind == "config_change" && (f.Role == "ruled_out" || f.Role == "mitigation") {
			continue
		}
		found[f.Kind] = true
	}
	for _, e := range tr.ExpectedFindings {
		if e.Must && !found[e.Kind] {
			s.Missing = append(s.Missing, e.Kind)
		}
	}
	for _, k := range tr.ForbiddenFindings {
		if found[k] {
			s.Forbidden = append(s.Forbidden, k)
		}
	}

	// The trigger: the rank-1 cause must be the truth's, and no cause may be
	// called a trigger that is not.
	isTruth := func(f *accFinding) bool {
		if tr.Trigger == nil || f == nil || f.Kind != tr.Trigger.Kind {
			return false
		}
		if tr.Trigger.UserAgent == "" {
			return true
		}
		if f.Fingerprint == nil {
			return false
		}
		for _, ua := range append([]string{f.Fingerprint.UserAgent}, f.Fingerprint.UserAgents...) {
			if uaMatches(ua, tr.Trigger.UserAgent) {
				return true
			}
		}
		return false
	}
	label := func(f *accFinding, kind string) string {
		if f != nil && f.Fingerprint != nil && f.Fingerprint.UserAgent != "" {
			return kind + " (" + f.Fingerprint.UserAgent + ")"
		}
		return kind
	}
	causes := slices.Clone(rep.Causes)
	sort.SliceStable(causes, func(i, j int) bool { return causes[i].Rank < causes[j].Rank })
	var first *accFinding
	firstKind := ""
	if len(causes) > 0 {
		first, firstKind = byID[causes[0].Finding], causes[0].Kind
	}
	wrongTrigger := false
	var triggers []string
	for _, c := range causes {
		if c.Role == "trigger" {
			triggers = append(triggers, label(byID[c.Finding], c.Kind))
			wrongTrigger = wrongTrigger || !isTruth(byID[c.Finding])
		}
	}
	if tr.Trigger == nil {
		s.WantTrigger = "none"
		s.GotTrigger = strings.Join(triggers, ", ")
		if s.GotTrigger == "" {
			s.GotTrigger = "none"
		}
		s.TriggerRight = len(triggers) == 0
	} else {
		s.WantTrigger = tr.Trigger.Kind
		s.GotTrigger = "none"
		if firstKind != "" {
			s.GotTrigger = label(first, firstKind)
		}
		if len(triggers) > 0 && !slices.Contains(triggers, s.GotTrigger) {
			s.GotTrigger += "; trigger " + strings.Join(triggers, ", ")
		}
		s.TriggerRight = isTruth(first) && !wrongTrigger
		onset, err := time.Parse(time.RFC3339Nano, tr.Trigger.Onset)
		for i := range rep.Findings {
			if f := &rep.Findings[i]; err == nil && isTruth(f) {
				d := f.Start.Sub(onset)
				s.OnsetErr = &d
				break
			}
		}
	}

	// The failing stretch: the report's impact against the worst stretch.
	var worst *simulate.TruthStretch
	for i := range tr.FailingStretches {
		if worst == nil || tr.FailingStretches[i].Failed > worst.Failed {
			worst = &tr.FailingStretches[i]
		}
	}
	reported := rep.Impact.FailedRequests > 0 && !rep.Impact.Onset.IsZero()
	switch {
	case worst == nil:
		s.StretchRight = !reported
	case reported:
		from, err1 := time.Parse(time.RFC3339Nano, worst.From)
		to, err2 := time.Parse(time.RFC3339Nano, worst.To)
		if err1 == nil && err2 == nil {
			ds, de := rep.Impact.Start.Sub(from), rep.Impact.End.Sub(to)
			s.StretchStartErr, s.StretchEndErr = &ds, &de
			s.StretchRight = ds.Abs() <= accTolerance && de.Abs() <= accTolerance
		}
	}

	// The crawler's addresses.
	if c := tr.Crawler; c != nil && tr.Trigger != nil && tr.Trigger.Kind == "crawler_burst" {
		for i := range rep.Findings {
			f := &rep.Findings[i]
			if n, ok := f.Facts["distinct_ips"]; ok && isTruth(f) && c.Window.DistinctIPs > 0 {
				e := (n - float64(c.Window.DistinctIPs)) / float64(c.Window.DistinctIPs)
				s.AddrErr = &e
				break
			}
		}
	}

	// The rules' backtest (issue 25's goal: >= 95% of the actor, < 0.5% of
	// other logged-out requests).
	if len(rep.Rules) > 0 {
		var crawler, refused, others, othersRefused int
		for _, r := range rep.Rules {
			b := r.Backtest
			crawler, refused = crawler+b.CrawlerRequests, refused+b.CrawlerRefused
			others, othersRefused = max(others, b.OtherLoggedOutRequests), othersRefused+b.OtherLoggedOutRefused
		}
		a, o := float64(refused)/float64(max(crawler, 1)), float64(othersRefused)/float64(max(others, 1))
		s.ActorRefused, s.OthersRefused = &a, &o
	}

	// The enabling change.
	var enablers []string
	matched := false
	for _, c := range causes {
		f := byID[c.Finding]
		if c.Role != "enabler" || c.Kind != "config_change" || f == nil || f.Change == nil {
			continue
		}
		enablers = append(enablers, f.Change.Key)
		if cc := tr.ConfigChange; cc != nil && f.Change.Key == cc.Key && f.Change.New == cc.New {
			matched = true
		}
	}
	if cc := tr.ConfigChange; cc != nil {
		// A change with no setting (a deploy script gaining a step) is
		// named by its file.
		what := cc.Key
		if what == "" {
			what = cc.File
		}
		s.WantChange = what + " " + cc.Old + " -> " + cc.New
		if cc.Old == "" {
			s.WantChange = what + " " + cc.New
		}
		s.ChangeRight = matched
	} else {
		s.ChangeRight = len(enablers) == 0
	}
	return s
}

func minutesText(d *time.Duration) string {
	if d == nil {
		return "-"
	}
	return fmt.Sprintf("%+.0f min", d.Minutes())
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// row is the score as table cells: scenario, seed, kinds, trigger (want ->
// got), trigger right, onset error, stretch error, address error, change right.
func (s accScore) row() []string {
	kinds := "ok"
	var parts []string
	for _, k := range s.Missing {
		parts = append(parts, "-"+k)
	}
	for _, k := range s.Forbidden {
		parts = append(parts, "+"+k)
	}
	if len(parts) > 0 {
		kinds = strings.Join(parts, " ")
	}
	stretch := "none/none"
	if s.StretchStartErr != nil {
		stretch = minutesText(s.StretchStartErr) + " / " + minutesText(s.StretchEndErr)
	} else if !s.StretchRight {
		stretch = "missed or invented"
	}
	addr := "-"
	if s.AddrErr != nil {
		addr = fmt.Sprintf("%+.0f%%", 100**s.AddrErr)
	}
	change := yesNo(s.ChangeRight)
	if s.WantChange != "" {
		change += " (" + s.WantChange + ")"
	}
	rules := "-"
	if s.ActorRefused != nil {
		rules = fmt.Sprintf("%.1f%% / %.2f%%", 100**s.ActorRefused, 100**s.OthersRefused)
	}
	return []string{s.Scenario, fmt.Sprint(s.Seed), kinds, s.WantTrigger + " -> " + s.GotTrigger, yesNo(s.TriggerRight),
		minutesText(s.OnsetErr), stretch, addr, change, rules}
}

// accHeader: tablewriter formats headers (upper case, spaced punctuation), so
// they are plain words.
var accHeader = []string{"scenario", "seed", "kinds missing or forbidden", "trigger truth then rank 1", "trigger right",
	"onset error", "failing stretch error start end", "crawler addresses error", "enabling change right",
	"rules refuse crawler then other logged out"}

// summary is one line per scenario over its seeds.
func summary(scenario string, rows []accScore) string {
	n := len(rows)
	var kinds, trig, onset, stretch, change, ruled, rulesMet int
	var addr []float64
	for _, s := range rows {
		if len(s.Missing)+len(s.Forbidden) == 0 {
			kinds++
		}
		if s.TriggerRight {
			trig++
		}
		if s.OnsetErr != nil && s.OnsetErr.Abs() <= accTolerance {
			onset++
		}
		if s.StretchRight {
			stretch++
		}
		if s.ChangeRight {
			change++
		}
		if s.AddrErr != nil {
			addr = append(addr, math.Abs(*s.AddrErr))
		}
		if s.ActorRefused != nil {
			ruled++
			if *s.ActorRefused >= 0.95 && *s.OthersRefused < 0.005 {
				rulesMet++
			}
		}
	}
	a := "-"
	if len(addr) > 0 {
		sort.Float64s(addr)
		a = fmt.Sprintf("median |error| %.0f%%", 100*addr[len(addr)/2])
	}
	onsetText := fmt.Sprintf("onset within 2 min %d/%d", onset, n)
	if len(rows) > 0 && rows[0].WantTrigger == "none" {
		onsetText = "onset n/a (no trigger)"
	}
	rules := ""
	if ruled > 0 {
		rules = fmt.Sprintf(", rules >= 95%% of the crawler and < 0.5%% of others %d/%d", rulesMet, ruled)
	}
	return fmt.Sprintf("%s: kinds right %d/%d, trigger right %d/%d, %s, failing stretch within 2 min %d/%d, "+
		"enabling change right %d/%d, crawler addresses %s%s", scenario, kinds, n, trig, n, onsetText, stretch, n, change, n, a, rules)
}

// TestAccuracyScore: the score tells a right report from reports that are
// wrong in each way the table reports (a wrong client named as the trigger,
// a change blamed where the truth has none, a stretch merged with a blip).
func TestAccuracyScore(t *testing.T) {
	tr := simulate.Truth{
		ExpectedFindings:  []simulate.Expected{{Kind: "crawler_burst", Must: true}, {Kind: "worker_saturation", Must: true}},
		ForbiddenFindings: []string{"idle_pinning"},
		Trigger: &simulate.TruthTrigger{Kind: "crawler_burst", Onset: "2026-10-29T08:15:00Z",
			UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"},
		FailingStretches: []simulate.TruthStretch{{From: "2026-10-29T05:48:00Z", To: "2026-10-29T05:49:00Z", Failed: 10},
			{From: "2026-10-29T08:17:00Z", To: "2026-10-29T08:36:00Z", Failed: 16232}},
		Crawler: &simulate.TruthCrawler{Window: simulate.TruthSpan{DistinctIPs: 1000}},
	}
	ts := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	right := func() accReport {
		var r accReport
		r.Impact.Start, r.Impact.End, r.Impact.FailedRequests = ts("2026-10-29T08:17:00Z"), ts("2026-10-29T08:37:00Z"), 16000
		r.Impact.Onset = r.Impact.Start
		r.Findings = []accFinding{
			{ID: "c1", Kind: "crawler_burst", Start: ts("2026-10-29T08:16:00Z"), Facts: map[string]float64{"distinct_ips": 1100}},
			{ID: "w1", Kind: "worker_saturation", Start: ts("2026-10-29T08:18:00Z")},
			{ID: "b1", Kind: "crawler_burst", Start: ts("2026-10-29T02:00:00Z")},
			{ID: "x1", Kind: "config_change", Change: &accChange{"listen.backlog", "4096"}},
		}
		r.Findings[0].Fingerprint = &accFingerprint{UserAgent: "Chrome 121"}
		r.Findings[2].Fingerprint = &accFingerprint{UserAgent: "Chrome 129"}
		r.Causes = []accCause{{"c1", "crawler_burst", 1, "trigger"}, {"w1", "worker_saturation", 2, "mechanism"}}
		return r
	}
	s := score("x", 1, tr, right())
	if !s.TriggerRight || !s.StretchRight || !s.ChangeRight || len(s.Missing)+len(s.Forbidden) != 0 ||
		s.OnsetErr == nil || *s.OnsetErr != time.Minute || s.AddrErr == nil || math.Abs(*s.AddrErr-0.1) > 1e-9 {
		t.Errorf("a right report scored %+v", s)
	}

	// The readers' Chrome 129 named as the trigger: same kind, wrong client.
	r := right()
	r.Causes[0].Finding = "b1"
	if s := score("x", 1, tr, r); s.TriggerRight || s.AddrErr == nil {
		t.Errorf("the wrong client as trigger scored right: %+v", s)
	}
	// A rotating actor whose largest part is another family: the truth's
	// agent is among its user agents.
	r = right()
	r.Findings[0].Fingerprint = &accFingerprint{UserAgent: "Firefox 127", UserAgents: []string{"Firefox 127", "Chrome 121/120"}}
	if s := score("x", 1, tr, r); !s.TriggerRight {
		t.Errorf("the rotating actor holding the truth's agent scored wrong: %+v", s)
	}
	// A second trigger beside the right one is wrong too.
	r = right()
	r.Causes[1].Role = "trigger"
	if s := score("x", 1, tr, r); s.TriggerRight {
		t.Errorf("a second, wrong trigger scored right: %+v", s)
	}
	// The blip merged with the outage: the impact starts 2.5 h early.
	r = right()
	r.Impact.Start = ts("2026-10-29T05:48:00Z")
	if s := score("x", 1, tr, r); s.StretchRight || s.StretchStartErr == nil || *s.StretchStartErr > -2*time.Hour {
		t.Errorf("a merged stretch scored right: %+v", s)
	}
	// A few stray failures and no failing stretch found (the impact spans
	// the window, no onset) where the truth has none: right.
	noStretch := tr
	noStretch.FailingStretches = nil
	r = right()
	r.Impact.Onset, r.Impact.FailedRequests = time.Time{}, 2
	if s := score("x", 1, noStretch, r); !s.StretchRight {
		t.Errorf("stray failures without a stretch scored as a stretch: %+v", s)
	}
	if s := score("x", 1, tr, r); s.StretchRight {
		t.Errorf("a missed stretch scored right: %+v", s)
	}
	// A change blamed where the truth has none.
	r = right()
	r.Causes = append(r.Causes, r.Causes[1])
	r.Causes[2].Finding, r.Causes[2].Kind, r.Causes[2].Role, r.Causes[2].Rank = "x1", "config_change", "enabler", 3
	if s := score("x", 1, tr, r); s.ChangeRight {
		t.Errorf("a blamed change scored right: %+v", s)
	}
	// Missing saturation, a forbidden finding.
	r = right()
	r.Findings[1].Kind = "idle_pinning"
	if s := score("x", 1, tr, r); !slices.Equal(s.Missing, []string{"worker_saturation"}) || !slices.Equal(s.Forbidden, []string{"idle_pinning"}) {
		t.Errorf("kinds: missing %v forbidden %v", s.Missing, s.Forbidden)
	}
	// No truth trigger (a flash crowd): any trigger is wrong, none is right.
	noTrig := tr
	noTrig.Trigger, noTrig.FailingStretches = nil, nil
	if s := score("x", 1, noTrig, right()); s.TriggerRight || s.StretchRight {
		t.Errorf("a trigger and an outage where there was none scored right: %+v", s)
	}
	for _, c := range []struct {
		family, ua string
		want       bool
	}{{"Chrome 121/129", tr.Trigger.UserAgent, true}, {"Chrome 129", tr.Trigger.UserAgent, false},
		{"DataHarvest 2", "Mozilla/5.0 (compatible; DataHarvest/2.1; +https://dataharvest.example/bot)", true},
		{"Safari 17", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Safari/605.1.15", true},
		{"Safari 18", "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.6 Safari/605.1.15", false},
		// Edge's product token is Edg/ (credential-stuffing seed 5's truth
		// agent was scored as missed under "Edge 125").
		{"Edge 125", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36 Edg/125.0.0.0", true},
		{"Edge 126", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36 Edg/125.0.0.0", false},
		{"Opera 110", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 OPR/110.0.0.0", true},
		{"", "x", false}} {
		if got := uaMatches(c.family, c.ua); got != c.want {
			t.Errorf("uaMatches(%q, %q) = %v", c.family, c.ua, got)
		}
	}
}
