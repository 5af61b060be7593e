package detect

import (
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchreqs"
	"github.com/aftermath-forensics/aftermath/sources"
)

// TestClusterMinutesMatchMaps: the clusters' PerMinute, Good and
// PHPPerMinute, counted in their minutes while the log is read and moved
// into the maps when detection asks (settle), are the maps Observe filled
// before, to the last bit of each PHP sum, where the obvious ways of keeping
// them go wrong: lines out of order (a minute before the last one's, new or
// seen, and sums whose order must not change), an arrival two minutes before
// its line's minute, PHP answers of no duration (a minute of zero seconds is
// still in PHPPerMinute), times whose minute an int32 does not hold (two such
// minutes must not be folded into one), and requests observed after
// detection asked for the clusters.
func TestClusterMinutesMatchMaps(t *testing.T) {
	reqs := benchreqs.Requests(t, 4<<20)
	// Shuffle the lines within runs of 200: some minutes come back after
	// later ones were counted, and their PHP seconds are summed in the
	// shuffled order by both.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i+200 <= len(reqs); i += 200 {
		run := reqs[i : i+200]
		rng.Shuffle(len(run), func(a, b int) { run[a], run[b] = run[b], run[a] })
	}
	far := time.Unix(1<<40, 0).UTC() // minute 18,325,193,796: past an int32
	odd := []sources.Request{
		{Time: far, ClientIP: netip.MustParseAddr("10.7.7.7"), Path: "/w/A", UserAgent: "far", Lang: "ko", Status: 200, Origin: sources.OriginUpstream, Duration: 0.25},
		{Time: far.Add(time.Hour), ClientIP: netip.MustParseAddr("10.7.7.7"), Path: "/w/B", UserAgent: "far", Lang: "ko", Status: 200, Origin: sources.OriginUpstream, Duration: 0.5},
		{Time: reqs[5].Time, ClientIP: netip.MustParseAddr("10.8.8.8"), Path: "/w/C", UserAgent: "zero", Lang: "de", Status: 200, Origin: sources.OriginUpstream},
		{Time: reqs[6].Time.Add(3 * time.Minute), ClientIP: netip.MustParseAddr("10.8.8.8"), Path: "/w/D", UserAgent: "zero", Lang: "de", Status: 200, Origin: sources.OriginUpstream, Duration: 150},
	}
	reqs = append(odd, reqs...)
	site := sources.Site{ClientTimeoutS: 200, HealthURI: "/healthz.php"}
	from, to := reqs[len(reqs)/3].Time, reqs[2*len(reqs)/3].Time
	got, want := NewTraffic(site, from, to), NewTraffic(site, from, to)
	half := len(reqs) / 2
	for i := range reqs[:half] {
		got.Observe(&reqs[i])
		want.observeOriginal(&reqs[i])
	}
	// Detection asks for a cluster midway; later requests still count.
	if got.ClusterOf(got.Clusters()[0].Key) == nil {
		t.Fatal("no cluster")
	}
	for i := range reqs[half:] {
		got.Observe(&reqs[half+i])
		want.observeOriginal(&reqs[half+i])
	}
	if len(got.clusters) < 10 || len(got.clusters) != len(want.clusters) {
		t.Fatalf("%d clusters, want %d", len(got.clusters), len(want.clusters))
	}
	got.Clusters()
	for k, w := range want.clusters {
		g := got.clusters[k]
		if !reflect.DeepEqual(g.PerMinute, w.PerMinute) || !reflect.DeepEqual(g.Good, w.Good) || !reflect.DeepEqual(g.PHPPerMinute, w.PHPPerMinute) {
			t.Fatalf("cluster %s: minutes differ:\n%v\n%v\n%v\nwant\n%v\n%v\n%v", k, g.PerMinute, g.Good, g.PHPPerMinute, w.PerMinute, w.Good, w.PHPPerMinute)
		}
	}
	// The odd requests are there to be got wrong.
	farMinute, zeroMinute := far.Unix()/60, reqs[2].Time.Unix()/60
	var farMinutes, zeroSeconds bool
	for _, c := range got.clusters {
		_, a := c.PHPPerMinute[farMinute]
		_, b := c.PHPPerMinute[farMinute+60]
		farMinutes = farMinutes || a && b
		if c.before[netip.MustParseAddr("10.8.8.8")] != nil {
			s, ok := c.PHPPerMinute[zeroMinute]
			zeroSeconds = ok && s == 0 && len(c.PHPPerMinute) == 2
		}
	}
	if !farMinutes || !zeroSeconds {
		t.Errorf("far minutes counted apart: %v; a minute of zero PHP seconds kept: %v", farMinutes, zeroSeconds)
	}
}
