package report

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

// teapotKind is a detector only this test registers, declared the way every
// real detector declares itself (init + detect.Register). It proves that a new
// detector is one file: its finding reaches report.json, the timeline and the
// causes, in both languages, without any other file knowing of it.
const teapotKind detect.Kind = "teapot_replies"

func init() {
	detect.Register(detect.Spec{
		Kind: teapotKind, New: func() detect.Detector { return teapotDetector{} },
		NewFacts: func() detect.Facts { return &teapotFacts{} },
		Role:     detect.RoleMechanism, Chain: 100,
		Explain: func(p detect.Phraser, f *detect.Finding, _ detect.Story) string {
			return p.Say("teapot.explain", struct {
				*detect.Finding
				Replies int
			}{f, detect.FactsOf[teapotFacts](f).Replies})
		},
		Moments: func(f *detect.Finding, _ detect.Story) []detect.Moment {
			return []detect.Moment{{Time: f.Start, Event: "teapot", Topic: "teapot", Text: func(p detect.Phraser) string {
				return p.Say("teapot.moment", nil)
			}}}
		},
		// The detector's words come with it, in every language.
		Messages: prose.MustParse(fstest.MapFS{
			"m/en.tmpl": {Data: []byte(`{{define "teapot.explain"}}PHP answered 418 {{n .Replies}} times from {{at .Start}}.{{end}}` +
				`{{define "teapot.moment"}}the first 418 answer{{end}}`)},
			"m/ko.tmpl": {Data: []byte(`{{define "teapot.explain"}}PHP가 {{at .Start}}부터 {{n .Replies}}번 418로 답했습니다.{{end}}` +
				`{{define "teapot.moment"}}첫 418 응답{{end}}`)},
		}, "m", Langs),
		Events: map[detect.Event]int{"teapot": 20},
	})
}

// teapotFacts are a teapot_replies finding's numbers.
type teapotFacts struct {
	Replies int `json:"replies"`
}

func (*teapotFacts) FindingKind() detect.Kind { return teapotKind }

// teapotDetector finds minutes in which PHP answered 418.
type teapotDetector struct{}

func (teapotDetector) Name() detect.Kind { return teapotKind }

func (teapotDetector) Detect(_ context.Context, ev *detect.Evidence, _ []detect.Finding) ([]detect.Finding, detect.Check, error) {
	if ev.Traffic == nil {
		return nil, detect.Check{Outcome: detect.OutcomeCouldNotRun, Reason: "no access log"}, nil
	}
	var start, end time.Time
	n := 0
	for _, m := range ev.Traffic.Minutes() {
		if c := m.Status[418]; c > 0 {
			if start.IsZero() {
				start = m.Start
			}
			end, n = m.Start.Add(time.Minute), n+c
		}
	}
	if n == 0 {
		return nil, detect.Check{}, nil
	}
	return []detect.Finding{{Kind: teapotKind, Start: start, End: end, Confidence: 1,
		Summary: "PHP answered 418.", Facts: &teapotFacts{Replies: n}}}, detect.Check{}, nil
}

func TestRegisteredDetectorReachesTheReport(t *testing.T) {
	from := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour)
	site := sources.Site{ClientTimeoutS: 30}
	tr := detect.NewTraffic(site, from, to)
	for i := range 600 {
		status := 200
		if i >= 300 && i < 320 {
			status = 418
		}
		tr.Observe(&sources.Request{Time: from.Add(time.Duration(i) * 6 * time.Second), ClientIP: netip.AddrFrom4([4]byte{10, 0, 0, byte(i % 50)}),
			Method: "GET", Host: "example.org", Path: "/index.php", Status: status, Duration: 0.05, UserAgent: "Mozilla/5.0 Firefox/120.0", Origin: sources.OriginUpstream})
	}
	ev := &detect.Evidence{From: from, To: to, Site: site, Traffic: tr}
	res, err := detect.Run(context.Background(), ev, detect.Detectors())
	if err != nil {
		t.Fatal(err)
	}
	r, err := Build(context.Background(), &evidence.Loaded{}, res, "UTC")
	if err != nil {
		t.Fatal(err)
	}
	data, err := Render(r, FormatJSON, LangEN)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, data)
	var got struct {
		Findings []struct{ ID, Kind string }
		Timeline []struct{ Finding, Event, Text string }
		Causes   []struct{ Finding, Kind, Role, Explanation string }
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	id := ""
	for _, f := range got.Findings {
		if f.Kind == string(teapotKind) {
			id = f.ID
		}
	}
	if id != "teapot_replies-1" {
		t.Fatalf("findings %+v: want the registered detector's finding teapot_replies-1", got.Findings)
	}
	// report.json read back finds the kind's facts type through its Spec.
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if tf, ok := detect.First(back.Findings, teapotKind).Facts.(*teapotFacts); !ok || tf.Replies != 20 {
		t.Errorf("teapot facts read back as %#v: want *teapotFacts with 20 replies", detect.First(back.Findings, teapotKind).Facts)
	}
	var moment, cause bool
	for _, m := range got.Timeline {
		moment = moment || (m.Finding == id && m.Event == "teapot" && m.Text == "the first 418 answer")
	}
	for _, c := range got.Causes {
		cause = cause || (c.Finding == id && c.Role == string(detect.RoleMechanism) && c.Explanation == "PHP answered 418 20 times from 02:30.")
	}
	if !moment || !cause {
		t.Errorf("timeline %+v\ncauses %+v\nwant the registered detector's moment and explanation", got.Timeline, got.Causes)
	}
	md, err := Render(r, FormatMarkdown, LangKO)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"첫 418 응답", "PHP가 2시 30분부터 20번 418로 답했습니다."} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the Korean postmortem lacks %q", want)
		}
	}
}
