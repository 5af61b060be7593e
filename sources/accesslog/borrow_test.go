package accesslog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/ingest"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// The detectors' findings on a simulated crawl, its targets read borrowed
// (ingest sets Options.BorrowTargets) with every chunk overwritten as soon
// as its batch is delivered, are those of a read that gives every target
// its own string, and so is the spill of the requests that the rules read
// again: whatever the aggregate or the spill keeps of a target past its
// batch is its own copy. The log spans several chunks, so a target kept by
// mistake reads garbage while later batches are observed, and in every pass
// after.
func TestBorrowedTargetsAreNotKept(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation in -short mode")
	}
	dir := filepath.Join(t.TempDir(), "b")
	if _, err := simulate.Run(context.Background(), simulate.Options{Scenario: "crawler-backlog", Seed: 1, BaselineHours: 1, Out: dir, StoredGzip: true}); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	in := evidence.FromBundle(b)
	in.KeepRequests = true
	var logBytes int64
	for _, p := range in.Access {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		logBytes += fi.Size()
	}
	if logBytes < 1<<20 {
		// A chunk holds at most 256 KiB of lines (readStep). The log is
		// stored uncompressed in its gzip file (StoredGzip: no deflate for a
		// bundle read and thrown away), so its size is its lines'.
		t.Fatalf("%d bytes of access log: too few chunks", logBytes)
	}

	owned, ownedSpill := detectWith(t, in, true, false)
	borrowed, borrowedSpill := detectWith(t, in, false, true)
	if !bytes.Equal(owned, borrowed) {
		t.Errorf("the findings with borrowed targets differ from those with owned targets:\n%s", firstDifference(owned, borrowed))
	}
	if len(ownedSpill) != len(borrowedSpill) {
		t.Fatalf("spill: %d requests borrowed, %d owned", len(borrowedSpill), len(ownedSpill))
	}
	for i := range ownedSpill {
		if ownedSpill[i] != borrowedSpill[i] {
			t.Fatalf("spill request %d: borrowed %+v, owned %+v", i, borrowedSpill[i], ownedSpill[i])
		}
	}
}

// detectWith loads in and runs the detectors with accesslog's test hooks
// set (own: targets owned despite BorrowTargets; poison: chunks overwritten
// once delivered), and returns the findings as JSON and every request the
// spill holds.
func detectWith(t *testing.T, in evidence.Inputs, own, poison bool) ([]byte, []sources.Request) {
	t.Helper()
	defer accesslog.SetBorrowHooks(own, poison)()
	ctx := context.Background()
	loaded, err := ingest.Load(ctx, in, time.UTC, detect.NewAggregate)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.Close()
	res, err := detect.Run(ctx, detect.EvidenceOf(loaded), detect.Detectors())
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.MarshalIndent(res.Findings, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	var spilled []sources.Request
	if err := loaded.Requests.Read(ctx, func(batch []sources.Request) error {
		spilled = append(spilled, batch...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return js, spilled
}

// firstDifference shows where two texts part, with some context.
func firstDifference(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(0, i-200)
	return fmt.Sprintf("at byte %d:\n%s\n---\n%s", i, a[from:min(len(a), i+200)], b[from:min(len(b), i+200)])
}
