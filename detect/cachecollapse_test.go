package detect

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// TestCacheCollapse: a cache answering 90% of pages drops to 30% for ten
// minutes and PHP, sent the rest, fails clients. With arrivals flat the
// cache emptying is the trigger, from its first minute; the same drop under
// a doubling of arrivals is new clients asking for what the cache did not
// hold, and no collapse.
func TestCacheCollapse(t *testing.T) {
	for _, tt := range []struct {
		name  string
		surge int // extra arrivals a minute while the ratio is low
		want  bool
	}{
		{"arrivals flat", 0, true},
		{"arrivals doubled", 100, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev := &Evidence{From: t0, To: t0.Add(40 * time.Minute), Loc: time.UTC, Site: sources.Site{Workers: 4, ClientTimeoutS: 10}}
			ev.Traffic = NewTraffic(ev.Site, ev.From, ev.To)
			for m := 0; m < 40; m++ {
				low := m >= 10 && m < 20
				hits, n := 90, 100
				if low {
					hits, n = 30, 100+tt.surge
				}
				at := t0.Add(time.Duration(m) * time.Minute)
				for i := 0; i < n; i++ {
					r := &sources.Request{Time: at.Add(time.Duration(i) * time.Minute / time.Duration(n+1)), ClientIP: netip.MustParseAddr(fewIPs(i)),
						Method: "GET", Path: "/2026/10/post-" + string(rune('a'+i%20)) + "/", Status: 200, UserAgent: firefox, TLS: true,
						Origin: sources.OriginStatic, Cache: sources.CacheHit, Duration: 0.001}
					if i >= hits {
						r.Origin, r.Cache, r.Duration = sources.OriginUpstream, sources.CacheMiss, 0.2
						if low && i%3 == 0 {
							r.Status, r.Origin, r.Cache, r.Duration = 504, sources.OriginProxy, sources.CacheUnknown, 10
						}
					}
					ev.Traffic.Observe(r)
				}
			}
			fs, check, err := cacheCollapseDetector{}.Detect(context.Background(), ev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want {
				if len(fs) != 0 || !strings.Contains(check.Reason, "arrivals rose") {
					t.Fatalf("findings %+v, check %+v: want the load's story", fs, check)
				}
				return
			}
			if len(fs) != 1 {
				t.Fatalf("no cache_collapse: %+v", check)
			}
			f := fs[0]
			if !f.Start.Equal(t0.Add(10*time.Minute)) || f.Role != RoleTrigger {
				t.Errorf("collapse at %s as %s, want %s as trigger", f.Start, f.Role, t0.Add(10*time.Minute))
			}
			facts := FactMap(f.Facts)
			if facts["hit_ratio_before"] < 0.85 || facts["hit_ratio_lowest"] > 0.4 || facts["recovered_after_min"] != 10 {
				t.Errorf("facts %v: want 90%% -> under 40%% (the 504s give no verdict), back after 10 min", facts)
			}
		})
	}
}
