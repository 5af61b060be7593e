package scan

import (
	"sort"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/prose"
)

// KindSurge is a rise of requests that behaves like people (assets after
// pages, cacheable articles, sessions): a flash crowd. Severity info. An
// anomaly kind beyond the finding kinds of package detect, in their
// namespace.
const KindSurge detect.Kind = "surge"

func init() {
	registerConcern(Concern{Kind: KindSurge, NewFacts: func() detect.Facts { return &SurgeFacts{} }})
}

// SurgeFacts are the numbers behind a surge: how much of the rise looks like
// people.
type SurgeFacts struct {
	// AssetShare and CookieShare are the shares of the people's requests
	// that fetched assets and carried cookies.
	AssetShare  float64 `json:"asset_share"`
	CookieShare float64 `json:"cookie_share"`
	// Languages counts the languages with 10 requests or more.
	Languages int `json:"languages"`
	// FingerprintsRising counts the people's fingerprints that rose.
	FingerprintsRising int `json:"fingerprints_rising"`
	// BaselineSlots counts the baseline's covered slots.
	BaselineSlots int `json:"baseline_slots"`
}

// FindingKind implements detect.Facts.
func (*SurgeFacts) FindingKind() detect.Kind { return KindSurge }

// surge judges the requests of people: the window's requests less those of
// the automated fingerprints that rose, against the usual requests.
func (j *judge) surge(auto, humans []rise) {
	autoReq := 0
	for _, r := range auto {
		autoReq += r.c.Requests
	}
	o := float64(j.recent.Requests - autoReq)
	b := j.baselineOf(func(p *Profile) (float64, bool) { return float64(p.Requests), true })
	m := surgeMeasure
	m.minExcess = minSurgePerHour * j.hours
	if !j.measureSite(metricHumans, o, b, m) {
		return
	}
	autoKeys := map[request.ClusterKey]bool{}
	for _, r := range auto {
		autoKeys[r.key] = true
	}
	var req, assets, cookies int
	langs := map[string]bool{}
	for k, c := range j.recent.Clusters {
		if autoKeys[k] {
			continue
		}
		req += c.Requests
		assets += c.Assets
		cookies += c.Cookies
		if k.Lang != "" && c.Requests >= 10 {
			langs[k.Lang] = true
		}
	}
	sort.Slice(humans, func(a, b int) bool { return humans[a].o-humans[a].b.Median > humans[b].o-humans[b].b.Median })
	type rising struct {
		Key      prose.Text
		Requests int
		Usual    float64
	}
	var names []rising
	for i, h := range humans {
		if i == 3 {
			break
		}
		names = append(names, rising{detect.SayKey(h.key), h.c.Requests, h.b.Median})
	}
	start := j.cfg.Window(j.recent.To).From
	if j.traffic != nil {
		level := detect.RiseLevel(b.Median/j.cfg.Since.Minutes(), standOutZ)
		start = firstMinute(j.traffic, j.cfg.Window(j.recent.To), func(m *detect.Minute) bool { return float64(m.Requests) >= level })
	}
	a := &Anomaly{
		Kind: KindSurge, Severity: SeverityInfo, Start: start,
		Observed: o, Baseline: b.Median, Score: round(surgeMeasure.score(o, b), 1),
		Facts: &SurgeFacts{AssetShare: round(share(assets, req), 3), CookieShare: round(share(cookies, req), 3),
			Languages: len(langs), FingerprintsRising: len(humans), BaselineSlots: b.N},
	}
	a.measured(metricClients)
	a.summarize(Messages.Say("surge.summary", struct {
		Span                             prose.Text
		Observed, Usual, Assets, Cookies float64
		Days, Languages                  int
		Rising                           []rising
	}{j.span(), o, b.Median, share(assets, req), share(cookies, req), b.N, len(langs), names}))
	j.anomalies = append(j.anomalies, a)
}
