package detect

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
)

// Spec declares one finding kind: everything the rest of the pipeline needs to
// know about it. Each detector's file registers its Spec from init, as Caddy
// modules do, so adding a detector is that file and its test: the run order
// (from Requires), the causal story (role, chain position), the report's prose and timeline, the
// scan's measure and the report.json schema's kind list all read the registry.
type Spec struct {
	// Kind is the finding kind the detector produces (report.json "kind").
	Kind Kind
	// Requires are the kinds whose findings the detector reads: it runs
	// after them and its prior findings are theirs only, so a dependency
	// cannot hide in the run order (as golang.org/x/tools/go/analysis's
	// Analyzer.Requires). Register refuses a cycle.
	Requires []Kind
	// RequiresRoles are roles whose kinds' findings the detector reads
	// whichever kinds register them (config_change dates the onset by the
	// earliest trigger or mechanism found): it requires every other kind of
	// those roles as if each were in Requires, a kind registered later
	// included.
	RequiresRoles []Role
	// ReadsLines says the detector judges from what only an access-log
	// line tells (addresses, routes, fingerprints, headers), never from
	// per-minute counts: where the raw lines of a failing stretch could not
	// be pulled, Run says it could not judge, or marks what it found
	// estimated (pullfailed.go).
	ReadsLines bool
	// New returns the detector.
	New func() Detector
	// NewFacts returns the kind's empty facts struct (a pointer), so that a
	// report.json read back finds each finding's fact fields by its kind.
	NewFacts func() Facts
	// Role is the kind's usual part in the causal story. A symptom kind is
	// fixed: what users saw is never the root cause, whatever a finding says.
	Role Role
	// Chain orders mechanisms and symptoms along the causal chain (1 first),
	// so that the causes read in rank order tell the story: workers fill, the
	// queue grows, the health check starves. 0 means no place on the chain.
	Chain int
	// Scan says what anomaly a finding becomes in a scan and how it is
	// measured there when no seasonal anomaly of its concern exists.
	Scan ScanMeasure
	// Explain tells the finding's part in the causes with its numbers; nil
	// leaves the finding's summary.
	Explain func(p Phraser, f *Finding, s Story) string
	// ExplainNotCause tells why a finding reported so that nobody blames it
	// (a mitigation, a change the numbers rule out) is no cause; nil leaves
	// the finding's summary.
	ExplainNotCause func(p Phraser, f *Finding, s Story) string
	// Moments lists the finding's timeline events; nil means none.
	Moments func(f *Finding, s Story) []Moment
	// Events orders the kind's timeline events among all others at the same
	// minute (lower first: cause before effect).
	Events map[Event]int
	// Messages are the sentences Explain and Moments say; nil means
	// detect's own (Messages). A detector registered from outside this
	// package brings its catalog here, so adding one stays one file.
	Messages *prose.Catalog
}

// ScanMeasure is how a scan turns a finding into an anomaly. Observed and
// Baseline read the finding's facts; Baseline nil means the detector measured
// against no baseline, so the scan claims none.
type ScanMeasure struct {
	// Anomaly is the scan's anomaly kind (a finding kind, or a concern such as
	// "saturation" several kinds join under); empty means Kind itself.
	Anomaly Kind
	// Severity is the anomaly's severity before the scan's floors; empty
	// means AnomalyWarning.
	Severity AnomalySeverity
	// Metric names the observed value in the scan report, said from the
	// kind's catalog so that a Korean scan report names it in Korean. Said
	// with SayLater: a Spec is registered in init, before any command knows
	// whether it will scan.
	Metric   prose.Text
	Observed func(f *Finding) float64
	Baseline func(f *Finding) float64
}

// AnomalySeverity is how loud a scan's anomaly is (scan.json "severity"):
// info is news, warning and critical make the scan anomalous. It ranks
// alarms, unlike a data-quality note's sources.Severity, which weighs a
// caveat. Package scan names it scan.Severity.
type AnomalySeverity string

// The severities of an anomaly, in increasing order.
const (
	AnomalyInfo     AnomalySeverity = "info"
	AnomalyWarning  AnomalySeverity = "warning"
	AnomalyCritical AnomalySeverity = "critical"
)

// Phraser says a detector's messages in one language: the report implements
// it, so a detector's prose lives beside the detector and its words in the
// kind's message files, never in a branch on the language.
type Phraser interface {
	// Say renders the message name of the kind's catalog (Spec.Messages,
	// else detect's own prose/en.tmpl and ko.tmpl) with data, numbers and
	// times printed as the report prints them.
	Say(name string, data any) string
}

// Story is what an explanation may read besides its own finding.
type Story interface {
	// Findings are all the findings of the report.
	Findings() []Finding
	// Window is the analysed period.
	Window() (from, to time.Time)
	// Changes are the configuration changes the report read, in time order.
	Changes() []sources.Change
	// QueueSeries is php-fpm's listen queue as the report shows it, one point
	// a minute; empty without the metric.
	QueueSeries() []SeriesPoint
	// Minutes are the report's per-minute access-log counts over the window.
	Minutes() []MinuteFailures
	// Coverage is what each source really covers of the window: a start
	// or an end where the access log has no lines is unknown (Unlogged).
	Coverage() []sources.Coverage
}

// SeriesPoint is one minute of a metric series the report shows.
type SeriesPoint struct {
	T time.Time
	V float64
}

// MinuteFailures is what reached no one in one minute of the report's
// access-log counts, as the report counts it.
type MinuteFailures struct {
	Time time.Time
	// Failed counts the minute's failed responses, late successes included.
	Failed int
	// Status counts the failed responses by status code ("503"); only codes
	// with at least one.
	Status map[string]int
	// Late counts successes logged after the clients had left.
	Late int
}

// Event names a timeline moment (report.json timeline "event"); each
// detector's file declares the events its moments carry.
type Event string

// Moment is one timeline event a finding contributes.
type Moment struct {
	Time time.Time
	// Event names the moment (report.json timeline "event"); Spec.Events
	// orders it.
	Event Event
	// Topic de-duplicates: two moments in the same minute with the same topic
	// say the same thing, and the lower Prio wins.
	Topic string
	Prio  int
	Text  func(p Phraser) string
}

// kinds is a set of registered specs.
type kinds struct {
	sync.RWMutex
	specs map[Kind]Spec
}

// registry holds every kind registered at init (a test swaps in its own).
var registry = &kinds{specs: map[Kind]Spec{}}

// Register adds a finding kind. It panics on a duplicate or incomplete spec
// and on requirements that form a cycle: registration happens at init, and a
// broken one must stop the program.
func Register(s Spec) {
	if s.Kind == "" || s.New == nil || s.NewFacts == nil || s.Role == "" {
		panic(fmt.Sprintf("detect.Register: kind %q needs Kind, New, NewFacts and Role", s.Kind))
	}
	if got := s.NewFacts().FindingKind(); got != s.Kind {
		panic(fmt.Sprintf("detect.Register: kind %q declares the facts of %q", s.Kind, got))
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.specs[s.Kind]; dup {
		panic(fmt.Sprintf("detect.Register: kind %q registered twice", s.Kind))
	}
	// Any new cycle passes through the new kind, so following requirements
	// from it finds every cycle once its last member registers; a kind not
	// registered yet ends a path (init order across files is by file name).
	if cycle := requireCycle(registry.specs, s); cycle != nil {
		panic("detect.Register: kinds require each other in a cycle: " + joinKinds(cycle, " -> "))
	}
	registry.specs[s.Kind] = s
}

// requirements are the kinds s requires among specs: its Requires, then
// every other kind of specs whose role is in its RequiresRoles, by name.
func requirements(specs map[Kind]Spec, s Spec) []Kind {
	out := slices.Clone(s.Requires)
	var byRole []Kind
	for kind, o := range specs {
		if kind != s.Kind && slices.Contains(s.RequiresRoles, o.Role) && !slices.Contains(out, kind) {
			byRole = append(byRole, kind)
		}
	}
	slices.Sort(byRole)
	return append(out, byRole...)
}

// requireCycle returns a cycle of requirements through s.Kind (starting and
// ending with it) among specs and s, or nil.
func requireCycle(specs map[Kind]Spec, s Spec) []Kind {
	with := maps.Clone(specs)
	with[s.Kind] = s
	seen := map[Kind]bool{}
	var path []Kind
	var visit func(kind Kind, requires []Kind) []Kind
	visit = func(kind Kind, requires []Kind) []Kind {
		path = append(path, kind)
		defer func() { path = path[:len(path)-1] }()
		for _, r := range requires {
			if r == s.Kind {
				return append(slices.Clone(path), r)
			}
			next, ok := specs[r]
			if !ok || seen[r] {
				continue
			}
			seen[r] = true
			if c := visit(r, requirements(with, next)); c != nil {
				return c
			}
		}
		return nil
	}
	return visit(s.Kind, requirements(with, s))
}

// Specs lists every registered kind in run order: each after the kinds it
// requires, and among those free to run, by kind name, so that the order is
// the same on every run. It panics when a kind requires one never registered.
func Specs() []Spec {
	registry.RLock()
	defer registry.RUnlock()
	waiting := map[Kind]int{} // unmet requirements per kind
	requiredBy := map[Kind][]Kind{}
	var ready []Kind
	for kind, s := range registry.specs {
		reqs := requirements(registry.specs, s)
		for _, r := range reqs {
			if _, ok := registry.specs[r]; !ok {
				panic(fmt.Sprintf("detect: kind %q requires %q, which no detector registers", kind, r))
			}
			requiredBy[r] = append(requiredBy[r], kind)
		}
		waiting[kind] = len(reqs)
		if len(reqs) == 0 {
			ready = append(ready, kind)
		}
	}
	out := make([]Spec, 0, len(registry.specs))
	for len(ready) > 0 {
		slices.Sort(ready)
		kind := ready[0]
		ready = ready[1:]
		out = append(out, registry.specs[kind])
		for _, k := range requiredBy[kind] {
			if waiting[k]--; waiting[k] == 0 {
				ready = append(ready, k)
			}
		}
	}
	return out
}

// SpecOf returns the spec of kind.
func SpecOf(kind Kind) (Spec, bool) {
	registry.RLock()
	defer registry.RUnlock()
	s, ok := registry.specs[kind]
	return s, ok
}

// Requirements are the kinds kind requires (Spec.Requires and the kinds of
// its RequiresRoles), whose findings it reads.
func Requirements(kind Kind) []Kind {
	registry.RLock()
	defer registry.RUnlock()
	return requirements(registry.specs, registry.specs[kind])
}

// specRole is the usual role of kind, "" when it is not registered.
func specRole(kind Kind) Role {
	s, _ := SpecOf(kind)
	return s.Role
}

// Kinds lists every registered finding kind in run order.
func Kinds() []Kind {
	var out []Kind
	for _, s := range Specs() {
		out = append(out, s.Kind)
	}
	return out
}

// EventOrder is the tie-break rank of a timeline event among all kinds'.
func EventOrder(event Event) int {
	for _, s := range Specs() {
		if o, ok := s.Events[event]; ok {
			return o
		}
	}
	return 0
}
