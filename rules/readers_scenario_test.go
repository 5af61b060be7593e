package rules

import (
	"context"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// classifyTruth runs the reader criteria over the requests of a truth file
// (the simulator's or the lab generator's, one row per request with its true
// class), one address at a time within each true class, and returns, per
// class, how many addresses there were and how many counted as readers.
func classifyTruth(t *testing.T, path string) (addresses, readers map[string]int) {
	t.Helper()
	classes := map[string]int{}
	var names []string
	rt := readerTracker{}
	counts := newArrivalCounts(nil, 64)
	testenv.EachCSVRow(t, path, func(col func(string) int, rec []string) {
		cClass, cIP, cStart, cURL := col("class"), col("src_ip"), col("start_unix"), col("url")
		class := rec[cClass]
		ci, ok := classes[class]
		if !ok {
			ci = len(names)
			classes[class], names = ci, append(names, class)
		}
		ip, err := netip.ParseAddr(rec[cIP])
		if err != nil {
			t.Fatal(err)
		}
		sec, err := strconv.ParseFloat(rec[cStart], 64)
		if err != nil {
			t.Fatal(err)
		}
		at := int64(sec * float64(time.Second))
		p, q, _ := strings.Cut(rec[cURL], "?")
		asset := detect.ClassifyPath(p, q, "") == detect.ClassAsset
		cls := classOf(ci, false, sources.LoggedInNo, false)
		counts.add(at, cls)
		rt.observe(ci, ip, at, asset, counts.stretch(at), cls)
	})
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
	ctx := context.Background()
	for _, sc := range []string{"flash-crowd", "crawler-backlog"} {
		dir := filepath.Join(t.TempDir(), sc)
		if _, err := simulate.Run(ctx, simulate.Options{Scenario: sc, Seed: 3, BaselineHours: 1, Out: dir}); err != nil {
			t.Fatal(err)
		}
		addresses, readers := classifyTruth(t, filepath.Join(dir, "truth-requests.csv.gz"))
		if sc == "flash-crowd" {
			check(sc, addresses, readers, "crowd", 0.95, 1)
		} else {
			check(sc, addresses, readers, "crawler", 0, 0.005)
		}
		check(sc, addresses, readers, "reader", 0.9, 1)
	}
	addresses, readers := classifyTruth(t, filepath.Join(labDir(t), "truth-requests.csv.gz"))
	check("lab", addresses, readers, "crawler", 0, 0)
	check("lab", addresses, readers, "baseline_reader", 0.9, 1)
}
