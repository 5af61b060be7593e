package scan

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

var (
	readerKey  = request.ClusterKey{UA: "Chrome", Lang: "ko-kr", LoggedIn: sources.LoggedInNo}
	crawlerKey = request.ClusterKey{UA: "Chrome", Lang: "zh-cn", LoggedIn: sources.LoggedInNo, NoClientHints: true}
	crowdKey   = request.ClusterKey{UA: "Safari", Lang: "en-us", LoggedIn: sources.LoggedInNo}
	// cheapKey is a browser without assets whose pages PHP's measured cost
	// calls cheap: read by path names ("tools") it would pass for a crawler.
	cheapKey = request.ClusterKey{UA: "Firefox", Lang: "de-de", LoggedIn: sources.LoggedInNo}
)

// readings are how detect measured each fingerprint reading the window.
var readings = map[request.ClusterKey]detect.Reading{
	readerKey:  {AssetShare: 1.0 / 3},
	crawlerKey: {ExpensiveShare: 1},
	crowdKey:   {AssetShare: 0.5},
	cheapKey:   {ExpensiveShare: 0.02},
}

// hourProfile is an hour with readers (a third of their requests assets) and
// the given extra fingerprints.
func hourProfile(end time.Time, readers int, extra map[request.ClusterKey]*ClusterProfile) *Profile {
	p := newProfile(Range{From: end.Add(-time.Hour), To: end})
	p.Clusters[readerKey] = &ClusterProfile{Requests: readers, IPs: readers / 3, Prefixes: readers / 4, Assets: readers / 3}
	p.Requests = readers
	p.Lines = readers
	for k, c := range extra {
		p.Clusters[k] = c
		p.Requests += c.Requests
		p.Lines += c.Requests
	}
	for i := 0; i < 200; i++ {
		p.Latency.Add(0.1 + float64(i%10)*0.01)
	}
	return p
}

func TestJudge(t *testing.T) {
	now := time.Date(2026, 10, 22, 3, 0, 0, 0, time.UTC)
	week := func() []*Profile {
		var out []*Profile
		for d, n := range []int{980, 1010, 1050, 940, 1000, 1020, 990} {
			out = append(out, hourProfile(now.AddDate(0, 0, -d-1), n, nil))
		}
		return out
	}
	crawl := &ClusterProfile{Requests: 5000, IPs: 4900, Prefixes: 4800}
	crowd := &ClusterProfile{Requests: 6000, IPs: 1500, Prefixes: 900, Assets: 3000, Cookies: 600}
	tiny := &ClusterProfile{Requests: 30, IPs: 30, Prefixes: 30}
	cheap := &ClusterProfile{Requests: 5000, IPs: 4900, Prefixes: 4800}
	refused := func(p *Profile) *Profile {
		p.Failed, p.Server5xx, p.Proxy503 = 2400, 2400, 2400
		p.Lines += 2400
		return p
	}
	finding := func(kind detect.Kind, facts map[string]float64) detect.Finding {
		return detect.Finding{ID: string(kind) + "-1", Kind: kind, Start: now.Add(-40 * time.Minute), End: now, Summary: string(kind) + " finding", Facts: detect.MustParseFacts(kind, facts)}
	}
	tests := []struct {
		name     string
		recent   *Profile
		base     []*Profile
		findings []detect.Finding
		want     []string // kind/severity of each anomaly, most severe first
	}{
		{"an ordinary hour", hourProfile(now, 1030, nil), week(), nil, nil},
		{"a new automated fingerprint", hourProfile(now, 1000, map[request.ClusterKey]*ClusterProfile{crawlerKey: crawl}), week(), nil,
			[]string{"crawler_burst/warning"}},
		{"a browser reading pages measured cheap is people, however its paths read", hourProfile(now, 1000, map[request.ClusterKey]*ClusterProfile{cheapKey: cheap}), week(), nil,
			[]string{"surge/info"}},
		{"people rising is a surge, not an attack", hourProfile(now, 1000, map[request.ClusterKey]*ClusterProfile{crowdKey: crowd}), week(), nil,
			[]string{"surge/info"}},
		{"a crawler while the proxy refuses: both critical", refused(hourProfile(now, 1000, map[request.ClusterKey]*ClusterProfile{crawlerKey: crawl})), week(), nil,
			[]string{"crawler_burst/critical", "error_rate/critical"}},
		{"thirty requests of a new fingerprint are no news", hourProfile(now, 1000, map[request.ClusterKey]*ClusterProfile{crawlerKey: tiny}), week(), nil, nil},
		{"a detector's finding below the volume floor is information", hourProfile(now, 1000, nil), week(),
			[]detect.Finding{finding(detect.KindUpstreamErrors, map[string]float64{"failed_total": 7, "failed_expected_in_base": 0})},
			[]string{"error_rate/info"}},
		{"a change with nothing to explain is dropped", hourProfile(now, 1000, nil), week(),
			[]detect.Finding{finding(detect.KindConfigChange, nil)}, nil},
		{"a starved health check is critical on its own", hourProfile(now, 1000, nil), week(),
			[]detect.Finding{finding(detect.KindHealthcheckStarved, map[string]float64{"est_queue_wait_s": 24, "health_timeout_s": 10})},
			[]string{"healthcheck_starved/critical"}},
		{"too few days: only the detectors judge", hourProfile(now, 1000, map[request.ClusterKey]*ClusterProfile{crawlerKey: crawl}), week()[:2],
			[]detect.Finding{{ID: "crawler_burst-1", Kind: detect.KindCrawlerBurst, Cluster: &crawlerKey, Start: now.Add(-time.Hour),
				Summary: "crawler", Facts: detect.MustParseFacts(detect.KindCrawlerBurst, map[string]float64{"requests": 5000, "peak_per_10m": 900, "baseline_per_10m": 0})}},
			[]string{"crawler_burst/warning"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &judge{cfg: Config{}.Defaults(), site: sources.Site{ClientTimeoutS: 10}, recent: tt.recent, base: tt.base,
				res: &detect.Result{Findings: tt.findings}, readings: readings, seasonal: len(tt.base) >= DefaultMinBaselineDays}
			j.run()
			var got []string
			for _, a := range j.anomalies {
				got = append(got, string(a.Kind)+"/"+string(a.Severity))
				if a.Summary == "" || a.Start.IsZero() {
					t.Errorf("%s: no summary or start", a.ID())
				}
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("anomalies %v, want %v", got, tt.want)
				for _, a := range j.anomalies {
					t.Logf("%s: %s", a.ID(), a.Summary)
				}
			}
		})
	}
}

type panicky struct{}

func (panicky) Name() detect.Kind { return "panicky" }
func (panicky) Detect(context.Context, *detect.Evidence, []detect.Finding) ([]detect.Finding, detect.Check, error) {
	var rs []int
	_ = rs[len(rs)-1] // index out of range, as a detector with a bug does
	return nil, detect.Check{}, nil
}

// A detector that panics costs its own check, not the scan.
func TestGuardedDetector(t *testing.T) {
	w := &Window{}
	ev := &detect.Evidence{From: time.Unix(0, 0), To: time.Unix(3600, 0)}
	res, err := detect.Run(context.Background(), ev, w.Guard([]detect.Detector{panicky{}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Checks) != 1 || res.Checks[0].Outcome != detect.OutcomeCouldNotRun || !strings.Contains(res.Checks[0].Reason, "index out of range") {
		t.Errorf("checks %+v: want could_not_run naming the panic", res.Checks)
	}
	if failed := w.failed; len(failed) != 1 || failed[0].Severity != sources.SeverityError || failed[0].Source != "panicky" {
		t.Errorf("data quality %+v: want one error from panicky", failed)
	}
}
