package report

import (
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect"
)

// The summary says which way the enabling change moved its setting from the
// values the config_change detector read, not from its own reading of the
// strings: durations grow too ("10s" to "30s"), and a value the detector could
// not read as a number is only "changed", whatever stripping commas makes of it.
func TestSummaryChangeDirectionFromFacts(t *testing.T) {
	tests := []struct {
		name, key, old, new string
		facts               map[string]float64
		en, ko              string
	}{
		{"a count grouped by thousands", "listen.backlog", "511", "4,096",
			map[string]float64{"old_value": 511, "new_value": 4096},
			"listen.backlog had grown from 511 to 4,096", "커진"},
		{"a duration", "php_fastcgi.read_timeout", "10s", "30s",
			map[string]float64{"old_value": 10, "new_value": 30},
			"php_fastcgi.read_timeout had grown from 10s to 30s", "커진"},
		{"a shrinking count", "listen.backlog", "4,096", "64",
			map[string]float64{"old_value": 4096, "new_value": 64},
			"listen.backlog had shrunk from 4,096 to 64", "줄어든"},
		// "1,5" is a list to the detector (no number stated): stripping the
		// comma would read 15 and say it grew.
		{"a list", "listen.backlog", "1,5", "20",
			map[string]float64{},
			"listen.backlog had changed from 1,5 to 20", "바뀐"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := referenceReport(t)
			f := detect.First(r.Findings, detect.KindConfigChange)
			c := *f.Change
			c.Key, c.Old, c.New = tt.key, tt.old, tt.new
			f.Change = &c
			f.Facts = detect.MustParseFacts(detect.KindConfigChange, tt.facts)
			if err := r.Assemble(); err != nil {
				t.Fatal(err)
			}
			en := summary(newPrinter(LangEN, mustZone("Asia/Seoul"), r.Impact.Start), r)
			if !strings.Contains(en, tt.en) {
				t.Errorf("summary lacks %q:\n%s", tt.en, en)
			}
			ko := summary(newPrinter(LangKO, mustZone("Asia/Seoul"), r.Impact.Start), r)
			if !strings.Contains(ko, tt.ko+" 탓에") {
				t.Errorf("Korean summary lacks %q:\n%s", tt.ko, ko)
			}
		})
	}
}

// When no timeout applies to a queued health check, the clients' timeout is
// the limit a backlog change's waits were held against (client_timeout_s):
// the Korean explanations say it as the English summary does, and a
// mitigation's claim is about the clients, not a health check that waits
// and passes. The queue of 64 still holds 13 s against the clients' 10 s,
// so "no longer starves" would be the obvious and wrong sentence.
func TestChangeProseAgainstClientTimeout(t *testing.T) {
	tests := []struct {
		name, old, new string
		role           detect.Role
		facts          map[string]float64
		notCause       bool
		en, ko         []string
		notKo          []string
	}{
		{"enabler: the clients were outlasted before too", "511", "4096", detect.RoleEnabler,
			map[string]float64{"old_value": 511, "new_value": 4096, "wait_before_s": 102.74, "wait_after_s": 823.55, "workers": 16, "service_time_s": 3.217, "client_timeout_s": 10},
			false,
			[]string{"Clients give up after 10 s: a full queue outlasted them before the change too."},
			[]string{"클라이언트는 10초 뒤에 포기합니다. 가득 찬 대기열은 변경 전에도 그보다 오래 걸렸습니다."}, nil},
		{"enabler: only the change let the queue outlast them", "16", "4096", detect.RoleEnabler,
			map[string]float64{"old_value": 16, "new_value": 4096, "wait_before_s": 3.2, "wait_after_s": 823.55, "workers": 16, "service_time_s": 3.217, "client_timeout_s": 10},
			false,
			[]string{"Clients give up after 10 s: only after the change could a full queue outlast them."},
			[]string{"가득 찬 대기열이 그보다 오래 걸리게 된 것은 이 변경 때문입니다."}, nil},
		{"mitigation: a full queue still outlasts the clients", "4096", "64", detect.RoleMitigation,
			map[string]float64{"old_value": 4096, "new_value": 64, "wait_before_s": 823.55, "wait_after_s": 12.87, "workers": 16, "service_time_s": 3.217, "client_timeout_s": 10, "risk_direction": -1},
			true, nil,
			[]string{"약 13초를 기다려야 해 클라이언트 제한 시간 10초를 넘기므로, 대기열 끝의 클라이언트는 PHP가 답하기 전에 포기합니다."},
			[]string{"상태 확인", "굶지"}},
		{"mitigation: a full queue drains within the clients' timeout", "4096", "32", detect.RoleMitigation,
			map[string]float64{"old_value": 4096, "new_value": 32, "wait_before_s": 823.55, "wait_after_s": 6.43, "workers": 16, "service_time_s": 3.217, "client_timeout_s": 10, "risk_direction": -1},
			true, nil,
			[]string{"약 6.4초로 클라이언트 제한 시간 10초 안에 끝나고"},
			[]string{"상태 확인", "굶지"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := referenceReport(t)
			f := detect.First(r.Findings, detect.KindConfigChange)
			c := *f.Change
			c.Key, c.Old, c.New = "listen.backlog", tt.old, tt.new
			f.Change, f.Role = &c, tt.role
			f.Facts = detect.MustParseFacts(detect.KindConfigChange, tt.facts)
			say := func(lang string) string {
				p := newPrinter(lang, mustZone("Asia/Seoul"), r.Impact.Start)
				if tt.notCause {
					return explainNotCause(p, r, f)
				}
				return explain(p, r, f)
			}
			en, ko := say(LangEN), say(LangKO)
			for _, s := range tt.en {
				if !strings.Contains(en, s) {
					t.Errorf("English lacks %q:\n%s", s, en)
				}
			}
			for _, s := range tt.ko {
				if !strings.Contains(ko, s) {
					t.Errorf("Korean lacks %q:\n%s", s, ko)
				}
			}
			for _, s := range tt.notKo {
				if strings.Contains(ko, s) {
					t.Errorf("Korean says %q though no timeout applies to the health check:\n%s", s, ko)
				}
			}
		})
	}
}
