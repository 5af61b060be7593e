package rules

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchlog"
	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/ingest"
)

// BenchmarkProposeRealistic measures Propose (profile pass, recording pass,
// replays from memory) on a realistic log: benchlog's generator, with the
// incident window where analyzebench puts it (the hour starting 11 hours in)
// and the findings the detectors make of it. Bytes are the log's.
func BenchmarkProposeRealistic(b *testing.B) {
	path := filepath.Join(b.TempDir(), "access.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	st, err := benchlog.Generate(w, benchlog.GenOptions{Size: 64 << 20})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	from := st.First.Add(11 * time.Hour).Truncate(time.Hour)
	m := bundle.Manifest{Timezone: "UTC"}
	m.Window.From, m.Window.To = from, from.Add(time.Hour)
	m.Site = sources.Site{ClientTimeoutS: 10, HealthURI: "/healthz.php", LoggedInCookie: "wikiUserID="}
	// As analyze does: the rules read the requests ingest kept.
	loaded, err := ingest.Load(ctx, evidence.Inputs{Manifest: m, Access: []string{path}, KeepRequests: true}, time.UTC, detect.NewAggregate)
	if err != nil {
		b.Fatal(err)
	}
	defer loaded.Close()
	ev := detect.EvidenceOf(loaded)
	out, err := detect.Run(ctx, ev, detect.Detectors())
	if err != nil {
		b.Fatal(err)
	}
	in := Input{Findings: out.Findings, Access: []string{path}, Requests: loaded.Requests, Site: ev.Site, From: ev.From, To: ev.To,
		BaselineFrom: ev.BaselineFrom, BaselineTo: ev.BaselineTo}
	b.SetBytes(st.Bytes)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		p, err := Propose(ctx, in)
		if err != nil || len(p.Rules) == 0 {
			b.Fatalf("%v: no rule (%v)", err, p)
		}
	}
	b.ReportMetric(float64(st.Lines), "lines/op")
}
