package report

import (
	"sort"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aftermath-forensics/aftermath/detect"
)

var roleRank = map[detect.Role]int{detect.RoleTrigger: 0, detect.RoleEnabler: 1, detect.RoleMechanism: 2, detect.RoleCandidate: 3, detect.RoleSymptom: 4}

// notCause is true for the roles of findings reported so that nobody blames
// them: a change that lowered the risk, one the arithmetic clears, or a rise
// too early or too small to have triggered the incident (context: the
// timeline shows it).
func notCause(role detect.Role) bool {
	return role == detect.RoleMitigation || role == detect.RoleRuledOut || role == detect.RoleContext
}

// roleOf is the finding's role: fixed for symptom kinds, else its own, else
// its kind's. A config_change may also be a mitigation (it lowered the risk) or
// ruled out (the numbers clear it): neither is a cause.
func roleOf(f *detect.Finding) detect.Role {
	spec, known := detect.SpecOf(f.Kind)
	if known && spec.Role == detect.RoleSymptom {
		return detect.RoleSymptom
	}
	if _, ok := roleRank[f.Role]; ok || notCause(f.Role) {
		return f.Role
	}
	if known {
		return spec.Role
	}
	return detect.RoleMechanism
}

// chainPlace is the kind's place along the causal chain (its spec's Chain),
// false when it has none.
func chainPlace(kind detect.Kind) (int, bool) {
	s, ok := detect.SpecOf(kind)
	return s.Chain, ok && s.Chain > 0
}

// assembleCauses ranks every finding: trigger, enabling change, mechanisms
// (in causal order), then symptoms. Each explanation carries its numbers.
func assembleCauses(r *Report, loc *time.Location) []Cause {
	day := r.incidentDay()
	var idx []int
	for i := range r.Findings {
		if !notCause(roleOf(&r.Findings[i])) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool {
		fa, fb := &r.Findings[idx[a]], &r.Findings[idx[b]]
		ra, rb := roleRank[roleOf(fa)], roleRank[roleOf(fb)]
		if ra != rb {
			return ra < rb
		}
		ca, oka := chainPlace(fa.Kind)
		cb, okb := chainPlace(fb.Kind)
		if oka != okb {
			return oka
		}
		if ca != cb {
			return ca < cb
		}
		return fa.Confidence > fb.Confidence
	})
	out := make([]Cause, 0, len(idx))
	for rank, i := range idx {
		f := &r.Findings[i]
		ph := r.say(loc, day, func(p printer) string { return explain(p, r, f) })
		out = append(out, Cause{Finding: f.ID, Kind: f.Kind, Rank: rank + 1, Role: roleOf(f), Explanation: ph.in(LangEN), texts: ph})
	}
	return out
}

// explain tells one finding's part with its numbers: its kind's Spec.Explain,
// else the detector's own summary.
func explain(p printer, r *Report, f *detect.Finding) string {
	if spec, ok := detect.SpecOf(f.Kind); ok && spec.Explain != nil {
		return spec.Explain(phraser{p, spec.Messages}, f, story{r})
	}
	return f.Summary
}

func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// explainNotCause says why a finding reported so that nobody blames it (a
// mitigation, a change ruled out) is no cause: its kind's
// Spec.ExplainNotCause, else the detector's own summary.
func explainNotCause(p printer, r *Report, f *detect.Finding) string {
	if spec, ok := detect.SpecOf(f.Kind); ok && spec.ExplainNotCause != nil {
		return spec.ExplainNotCause(phraser{p, spec.Messages}, f, story{r})
	}
	return f.Summary
}
