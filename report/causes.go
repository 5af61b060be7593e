package report

import (
	"sort"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aftermath-forensics/aftermath/detect"
)

var roleRank = map[string]int{detect.RoleTrigger: 0, detect.RoleEnabler: 1, detect.RoleMechanism: 2, detect.RoleCandidate: 3, detect.RoleSymptom: 4}

// notCause is true for the roles of findings reported so that nobody blames
// them: a change that lowered the risk, one the arithmetic clears, or a rise
// too early or too small to have triggered the incident (context: the
// timeline shows it).
func notCause(role string) bool {
	return role == detect.RoleMitigation || role == detect.RoleRuledOut || role == detect.RoleContext
}

// roleOf is the finding's role: fixed for symptom kinds, else its own, else
// its kind's. A config_change may also be a mitigation (it lowered the risk) or
// ruled out (the numbers clear it): neither is a cause.
func roleOf(f *detect.Finding) string {
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
func chainPlace(kind string) (int, bool) {
	s, ok := detect.SpecOf(kind)
	return s.Chain, ok && s.Chain > 0
}

// assembleCauses ranks every finding: trigger, enabling change, mechanisms
// (in causal order), then symptoms. Each explanation carries its numbers.
func assembleCauses(r *Report, loc *time.Location) []Cause {
	day := r.Impact.Start
	if day.IsZero() {
		day = r.Window.From
	}
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
		ph := say(loc, day, func(p printer) string { return explain(p, r, f) })
		out = append(out, Cause{Finding: f.ID, Kind: f.Kind, Rank: rank + 1, Role: roleOf(f), Explanation: ph.in(LangEN), texts: ph})
	}
	return out
}

// explain tells one finding's part with its numbers: its kind's Spec.Explain,
// else the detector's own summary.
func explain(p printer, r *Report, f *detect.Finding) string {
	if spec, ok := detect.SpecOf(f.Kind); ok && spec.Explain != nil {
		return spec.Explain(phraser{p}, f, story{r})
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

// explainNotCause says why a change is no cause: ruled out by the numbers, or
// a mitigation. The detector's own summary carries the arithmetic in English;
// Korean gets the same numbers from the facts.
func explainNotCause(p printer, f *detect.Finding) string {
	if f.Change == nil {
		return f.Summary
	}
	c := *f.Change
	what := changeText(p, c)
	cf := detect.FactsOf[detect.ConfigChangeFacts](f)
	peak, old := cf.QueuePeak.V, cf.OldValue.V
	before, after, timeout := cf.WaitBeforeS.V, cf.WaitAfterS.V, cf.HealthTimeoutS.V
	if !p.ko {
		if f.Summary != "" {
			return f.Summary
		}
		return capitalize(what) + "."
	}
	s := p.at(c.Time) + "에 바뀐 " + what + ": "
	if f.Role == detect.RoleMitigation {
		s += "위험을 낮추는 변경입니다."
		if after > 0 && (timeout == 0 || after <= timeout) {
			s += " 대기열이 가득 차도 기다리는 시간은 약 " + p.secs(after) + "이므로 상태 확인이 대기열 뒤에서 굶지 않습니다."
		}
		return s
	}
	s += "이번 장애의 원인이 아닙니다."
	if v := cf.QueuePassedOldCap; v.OK && !v.V && old > 0 {
		s += " 대기열은 가장 길 때 " + p.n(peak) + "로 예전 상한 " + josa(p.n(old), "을/를") + " 넘지 않았으므로, 예전 값이었어도 달라진 것이 없습니다."
	}
	if before > 0 && timeout > 0 && before > timeout {
		s += " 예전 값도 이미 안전하지 않았습니다. 예전 상한까지 찬 대기열은 약 " + josa(p.secs(before), "을/를") + " 기다리게 해 상태 확인 제한 시간 " + josa(p.secs(timeout), "을/를") + " 넘기고, 지금 값으로는 약 " + josa(p.secs(after), "이/가") + " 됩니다."
	}
	return s
}
