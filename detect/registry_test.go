package detect

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// onlyKinds replaces the registry with an empty one for the test.
func onlyKinds(t *testing.T) {
	saved := registry
	registry = &kinds{specs: map[Kind]Spec{}}
	t.Cleanup(func() { registry = saved })
}

// stubFacts are a test kind's facts.
type stubFacts struct{ kind Kind }

func (f *stubFacts) FindingKind() Kind { return f.kind }

// stubDetector finds one finding of its kind and records the kinds of the
// prior findings it was given.
type stubDetector struct {
	kind Kind
	saw  *[]string
}

func (d stubDetector) Name() Kind { return d.kind }

func (d stubDetector) Detect(_ context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error) {
	for _, f := range prior {
		*d.saw = append(*d.saw, string(d.kind)+" saw "+f.ID)
	}
	return []Finding{{Kind: d.kind, Start: ev.From, End: ev.To, Facts: &stubFacts{d.kind}}}, Check{}, nil
}

func registerStub(kind Kind, saw *[]string, requires ...Kind) {
	Register(Spec{Kind: kind, Requires: requires, Role: RoleMechanism,
		New:      func() Detector { return stubDetector{kind: kind, saw: saw} },
		NewFacts: func() Facts { return &stubFacts{kind} }})
}

// A detector runs after the kinds it requires whatever their names (the name
// only orders kinds free to run), and reads their findings and no others.
func TestRequiredKindsRunFirst(t *testing.T) {
	onlyKinds(t)
	var saw []string
	registerStub("aa_reader", &saw, "zz_source")
	registerStub("mm_bystander", &saw)
	registerStub("zz_source", &saw)
	registerStub("bb_late_reader", &saw, "aa_reader", "mm_bystander")
	from := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	res, err := Run(context.Background(), &Evidence{From: from, To: from.Add(time.Hour)}, Detectors())
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, c := range res.Checks {
		ran = append(ran, string(c.Name))
	}
	if want := []string{"mm_bystander", "zz_source", "aa_reader", "bb_late_reader"}; !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q", ran, want)
	}
	if want := []string{"aa_reader saw zz_source-1", "bb_late_reader saw mm_bystander-1", "bb_late_reader saw aa_reader-1"}; !slices.Equal(saw, want) {
		t.Errorf("prior findings: %q, want %q", saw, want)
	}
}

// Requirements that form a cycle are refused when the kind closing it
// registers, naming the cycle; a requirement nobody registers is refused when
// the order is asked for.
func TestRegisterRefusesCycles(t *testing.T) {
	onlyKinds(t)
	var saw []string
	registerStub("a", &saw, "b")
	registerStub("b", &saw, "c")
	if got := registerPanic(func() { registerStub("c", &saw, "a") }); got != "detect.Register: kinds require each other in a cycle: c -> a -> b -> c" {
		t.Errorf("closing a cycle: %q", got)
	}
	if got := registerPanic(func() { registerStub("self", &saw, "self") }); got != "detect.Register: kinds require each other in a cycle: self -> self" {
		t.Errorf("requiring itself: %q", got)
	}
	if got := registerPanic(func() { Specs() }); got != `detect: kind "b" requires "c", which no detector registers` {
		t.Errorf("missing requirement: %q", got)
	}
	registerStub("c", &saw)
	if got := registerPanic(func() { Specs() }); got != "" {
		t.Errorf("no cycle: %q", got)
	}
}

func registerPanic(f func()) (msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprint(p)
		}
	}()
	f()
	return ""
}

// The built-in detectors' order: each after what it reads.
func TestBuiltinRunOrder(t *testing.T) {
	pos := map[Kind]int{}
	for i, k := range Kinds() {
		pos[k] = i
	}
	for _, s := range Specs() {
		for _, r := range Requirements(s.Kind) {
			if pos[r] >= pos[s.Kind] {
				t.Errorf("%s runs before %s, which it requires", s.Kind, r)
			}
		}
	}
	if s, _ := SpecOf(KindServiceTimeRegression); !slices.Contains(s.Requires, KindIdlePinning) {
		t.Errorf("service_time_regression reads idle_pinning's finding but requires only %q", s.Requires)
	}
}

// A detector that requires a role runs after every other kind of that role,
// one registered after it included, and reads their findings; a cycle closed
// through a role is refused like any other.
func TestRequiredRolesRunFirst(t *testing.T) {
	onlyKinds(t)
	var saw []string
	Register(Spec{Kind: "aa_weigher", RequiresRoles: []Role{RoleTrigger}, Role: RoleEnabler,
		New:      func() Detector { return stubDetector{kind: "aa_weigher", saw: &saw} },
		NewFacts: func() Facts { return &stubFacts{"aa_weigher"} }})
	registerStub("mm_mechanism", &saw)
	registerTrigger := func(kind Kind, requires ...Kind) {
		Register(Spec{Kind: kind, Requires: requires, Role: RoleTrigger,
			New:      func() Detector { return stubDetector{kind: kind, saw: &saw} },
			NewFacts: func() Facts { return &stubFacts{kind} }})
	}
	registerTrigger("zz_trigger")
	from := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	res, err := Run(context.Background(), &Evidence{From: from, To: from.Add(time.Hour)}, Detectors())
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, c := range res.Checks {
		ran = append(ran, string(c.Name))
	}
	if want := []string{"mm_mechanism", "zz_trigger", "aa_weigher"}; !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q", ran, want)
	}
	if want := []string{"aa_weigher saw zz_trigger-1"}; !slices.Equal(saw, want) {
		t.Errorf("prior findings: %q, want %q", saw, want)
	}
	if got := registerPanic(func() { registerTrigger("bb_trigger", "aa_weigher") }); got != "detect.Register: kinds require each other in a cycle: bb_trigger -> aa_weigher -> bb_trigger" {
		t.Errorf("closing a cycle through a role: %q", got)
	}
}
