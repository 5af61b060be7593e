package rules

import (
	"context"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// classifyTruth runs the reader criteria over the access log of a recording
// whose truth file (the simulator's or the lab generator's, one row per
// request with its true class and address) says who each address was: every
// line is read by the real log reader (so the Referer is read as analyze
// reads it), its address looked up in the truth, and the criteria applied one
// address at a time within each true class. It returns, per class, how many
// addresses there were and how many counted as readers. Addresses the truth
// gives more than one class are left out.
func classifyTruth(t *testing.T, dir string) (addresses, readers map[string]int) {
	t.Helper()
	classOfIP := map[netip.Addr]string{}
	testenv.EachCSVRow(t, filepath.Join(dir, "truth-requests.csv.gz"), func(col func(string) int, rec []string) {
		ip, err := netip.ParseAddr(rec[col("src_ip")])
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := classOfIP[ip]; ok && c != rec[col("class")] {
			classOfIP[ip] = ""
			return
		}
		classOfIP[ip] = rec[col("class")]
	})
	classes := map[string]int{}
	var names []string
	rt := readerTracker{}
	counts := newArrivalCounts(nil, 64)
	logs, err := filepath.Glob(filepath.Join(dir, "access", "*"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no access log in %s (%v)", dir, err)
	}
	_, err = accesslog.Read(context.Background(), logs, accesslog.Options{}, nil, func(batch []sources.Request) error {
		for i := range batch {
			r := &batch[i]
			class := classOfIP[r.ClientIP]
			if class == "" {
				continue
			}
			ci, ok := classes[class]
			if !ok {
				ci = len(names)
				classes[class], names = ci, append(names, class)
			}
			at := r.Start().UnixNano()
			asset := request.ClassifyPath(r.Path, r.Query, "") == request.ClassAsset
			cls := classOf(ci, false, sources.LoggedInNo, false)
			counts.add(at, cls)
			rt.observe(ci, r.ClientIP, at, asset, r.SiteReferer, r.Method, counts.stretch(at), cls, false)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	addresses, readers = map[string]int{}, map[string]int{}
	found := rt.settle(counts)
	for k := range rt {
		addresses[names[k.crawler]]++
		if found.has(k.crawler, k.ip) {
			readers[names[k.crawler]]++
		}
	}
	return addresses, readers
}

// TestReadersOnRecordedTraffic holds the reader criteria to traffic whose
// truth is known: the flash crowd's readers (sessions, assets after pages)
// and the ordinary readers count as readers; the crawlers of the lab
// recording and of the simulated crawler-backlog do not.
func TestReadersOnRecordedTraffic(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation in -short mode")
	}
	check := func(name string, addresses, readers map[string]int, class string, atLeast, atMost float64) {
		t.Helper()
		n, k := addresses[class], readers[class]
		if n == 0 {
			t.Errorf("%s: no %s address in the truth, so this proves nothing (%v)", name, class, addresses)
			return
		}
		if share := float64(k) / float64(n); share < atLeast || share > atMost {
			t.Errorf("%s: %d of %d %s addresses count as readers (%.1f%%), want %.0f%% to %.0f%%", name, k, n, class, 100*share, 100*atLeast, 100*atMost)
		}
		t.Logf("%s: %d of %d %s addresses count as readers", name, k, n, class)
	}
	for _, o := range []simulate.Options{{Scenario: "flash-crowd", Seed: 3, BaselineHours: 1}, crawlerBacklogHour} {
		sc, dir := o.Scenario, sharedBundle(t, o)
		addresses, readers := classifyTruth(t, dir)
		if sc == "flash-crowd" {
			check(sc, addresses, readers, "crowd", 0.95, 1)
		} else {
			check(sc, addresses, readers, "crawler", 0, 0.005)
		}
		check(sc, addresses, readers, "reader", 0.9, 1)
	}
	addresses, readers := classifyTruth(t, labDir(t))
	check("lab", addresses, readers, "crawler", 0, 0)
	check("lab", addresses, readers, "baseline_reader", 0.9, 1)
}
