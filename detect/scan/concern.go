package scan

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/aftermath-forensics/aftermath/detect"
)

// Concern declares an anomaly kind the scan measures itself against the
// seasonal baseline, as detect.Spec declares a finding kind: the file that
// judges it registers it from init with the facts struct its anomalies
// state, so a fact is a typed field and scan.json's schema lists each kind's
// facts from the types (go test ./report -run TestScanSchemaFactsAreTheTypes
// -update).
type Concern struct {
	// Kind is the anomaly kind (scan.json "kind"). A concern may measure a
	// finding kind: a fingerprint's seasonal rise is a crawler_burst, as the
	// crawler detector's finding is, and the two join.
	Kind detect.Kind
	// NewFacts returns the concern's empty facts struct (a pointer) whose
	// FindingKind is Kind.
	NewFacts func() detect.Facts
}

var concerns struct {
	sync.RWMutex
	list []Concern
}

// registerConcern adds a concern; a kind registered twice, or facts of
// another kind, is a programming error.
func registerConcern(c Concern) {
	if c.Kind == "" || c.NewFacts == nil {
		panic(fmt.Sprintf("scan.registerConcern: concern %q needs Kind and NewFacts", c.Kind))
	}
	if got := c.NewFacts().FindingKind(); got != c.Kind {
		panic(fmt.Sprintf("scan.registerConcern: concern %q declares the facts of %q", c.Kind, got))
	}
	concerns.Lock()
	defer concerns.Unlock()
	for _, o := range concerns.list {
		if o.Kind == c.Kind {
			panic(fmt.Sprintf("scan.registerConcern: concern %q registered twice", c.Kind))
		}
	}
	concerns.list = append(concerns.list, c)
}

// ConcernSpecs are the registered concerns, in registration order.
func ConcernSpecs() []Concern {
	concerns.RLock()
	defer concerns.RUnlock()
	return slices.Clone(concerns.list)
}

// Concerns are the anomaly kinds a scan adds to the finding kinds: the
// registered concerns that measure no finding kind.
func Concerns() []detect.Kind {
	findingKinds := detect.Kinds()
	var out []detect.Kind
	for _, c := range ConcernSpecs() {
		if !slices.Contains(findingKinds, c.Kind) {
			out = append(out, c.Kind)
		}
	}
	return out
}

// FactNames lists the names scan.json may give the facts of an anomaly of
// kind, as detect.FactNames does for a finding: those of the concern of that
// kind and of every finding kind whose findings become or join such an
// anomaly (its ScanMeasure.Anomaly), in that order without repeats.
func FactNames(kind detect.Kind) (names, numberedPrefixes []string) {
	add := func(fs detect.Facts) {
		n, p := detect.FactNames(fs)
		for _, x := range n {
			if !slices.Contains(names, x) {
				names = append(names, x)
			}
		}
		for _, x := range p {
			if !slices.Contains(numberedPrefixes, x) {
				numberedPrefixes = append(numberedPrefixes, x)
			}
		}
	}
	for _, c := range ConcernSpecs() {
		if c.Kind == kind {
			add(c.NewFacts())
		}
	}
	for _, s := range detect.Specs() {
		if findingKind(s.Kind).kind == kind {
			add(s.NewFacts())
		}
	}
	return names, numberedPrefixes
}

// FactMap is a's facts as scan.json writes them: those of Facts, then each
// name of a joining finding's facts that Facts does not state (the first
// numbers stand).
func (a *Anomaly) FactMap() map[string]float64 {
	m := statedFacts(a.Facts)
	for _, j := range a.Joined {
		for k, v := range statedFacts(j) {
			if _, ok := m[k]; !ok {
				m[k] = v
			}
		}
	}
	return m
}

func statedFacts(fs detect.Facts) map[string]float64 {
	if s, ok := fs.(readFacts); ok {
		return maps.Clone(s.m)
	}
	return detect.FactMap(fs)
}

// readFacts are an anomaly's facts read back from scan.json, by name: the
// kind alone cannot say which struct each came from once findings joined.
type readFacts struct {
	kind detect.Kind
	m    map[string]float64
}

func (r readFacts) FindingKind() detect.Kind     { return r.kind }
func (r readFacts) MarshalJSON() ([]byte, error) { return json.Marshal(r.m) }

// MarshalJSON writes the anomaly with its facts as scan.json's object of
// numbers (FactMap; left out when there are none); every other field as its
// tag says.
func (a Anomaly) MarshalJSON() ([]byte, error) {
	type plain Anomaly // the fields without this method
	p := plain(a)
	p.Facts = nil
	if m := a.FactMap(); len(m) > 0 {
		p.Facts = readFacts{a.Kind, m}
	}
	return json.Marshal(p)
}

// UnmarshalJSON reads an anomaly back, its facts by name.
func (a *Anomaly) UnmarshalJSON(data []byte) error {
	type plain Anomaly
	aux := struct {
		*plain
		Facts map[string]float64 `json:"facts"`
	}{plain: (*plain)(a)}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	a.Facts, a.Joined = nil, nil
	if aux.Facts != nil {
		a.Facts = readFacts{a.Kind, aux.Facts}
	}
	return nil
}
