package scan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aftermath-forensics/aftermath/detect"
)

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
	if !j.measureSite("client requests (automated rises excluded)", o, b, m) {
		return
	}
	autoKeys := map[detect.ClusterKey]bool{}
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
	var names []string
	for i, h := range humans {
		if i == 3 {
			break
		}
		names = append(names, fmt.Sprintf("%s (%s, usually %s)", h.key, count(h.c.Requests), num(h.b.Median)))
	}
	who := ""
	if len(names) > 0 {
		who = "; the fingerprints that rose most: " + strings.Join(names, ", ")
	}
	start := j.cfg.Window(j.recent.To).From
	if j.traffic != nil {
		level := detect.RiseLevel(b.Median/j.cfg.Since.Minutes(), standOutZ)
		start = firstMinute(j.traffic, j.cfg.Window(j.recent.To), func(m *detect.Minute) bool { return float64(m.Requests) >= level })
	}
	j.anomalies = append(j.anomalies, &Anomaly{
		Kind: KindSurge, Severity: SeverityInfo, Start: start,
		Metric: "client requests in the window", Observed: o, Baseline: b.Median, Score: round(surgeMeasure.score(o, b), 1),
		Facts: map[string]float64{"asset_share": round(share(assets, req), 3), "cookie_share": round(share(cookies, req), 3),
			"languages": float64(len(langs)), "fingerprints_rising": float64(len(humans)), "baseline_slots": float64(b.N)},
		Summary: fmt.Sprintf("Requests rose to %s %s against a usual %s at this hour (median of %d days), and the rise behaves like people: %s of requests were assets fetched after pages, %s carried cookies, %d languages%s. A surge (a flash crowd), not an attack.",
			num(o), j.span(), num(b.Median), b.N, pct(share(assets, req)), pct(share(cookies, req)), len(langs), who),
	})
}
