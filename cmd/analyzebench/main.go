// Command analyzebench times what aftermath analyze --access does on one log
// (analysis.Run, then rendering every format), split into ingest and what
// follows it, and prints its benchref.Result as JSON for
// ingestbench's tables. It is its own program because report and rules make a
// much bigger binary than ingest needs, which would add to ingestbench's RSS.
// Like ingestbench it lives under cmd/ because it imports detect, report and
// rules, which nothing under sources/ may; it is not shipped.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/analysis"
	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchref"
	"github.com/aftermath-forensics/aftermath/cmd/internal/initpages"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

// liveHeap is the largest live heap seen so far (bytes).
var liveHeap uint64

// noteLiveHeap updates liveHeap from the last collection's live heap.
func noteLiveHeap() {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		liveHeap = max(liveHeap, sample[0].Value.Uint64())
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: analyzebench ACCESS_LOG")
		os.Exit(2)
	}
	initpages.Release() // as aftermath does
	t0 := time.Now()
	res := benchref.Result{What: "analyze", Procs: runtime.GOMAXPROCS(0)}
	stop, err := profile()
	if err == nil {
		err = analyze(os.Args[1], &res)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "analyzebench:", err)
		os.Exit(1)
	}
	res.Measure(t0)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.AllocMiB, res.Mallocs = float64(ms.TotalAlloc)/(1<<20), ms.Mallocs
	noteLiveHeap()
	res.LiveMiB = float64(liveHeap) / (1 << 20)
	json.NewEncoder(os.Stdout).Encode(res)
}

// analyze runs what aftermath analyze --access does (analysis.Run, then
// rendering every format), with the incident window on the log's busiest
// stretch: the hour starting 11 hours into it. Ingest ends where the pipeline
// says it is detecting (afterIngest).
func analyze(path string, res *benchref.Result) error {
	ctx := context.Background()
	first, err := firstTime(path)
	if err != nil {
		return err
	}
	from := first.Add(11 * time.Hour).Truncate(time.Hour)
	m := bundle.Manifest{Timezone: "UTC"}
	m.Window.From, m.Window.To = from, from.Add(time.Hour)
	m.Site = sources.Site{ClientTimeoutS: 10, HealthURI: "/healthz.php", LoggedInCookie: "wikiUserID="}
	after := &afterIngest{}
	in := evidence.Inputs{Manifest: m, Access: []string{path}, Progress: after}
	t0 := time.Now()
	a, err := analysis.Run(ctx, in, analysis.Options{Langs: []string{report.LangEN}}) // aftermath analyze's default --lang
	if err != nil {
		return err
	}
	rendered := 0
	for _, format := range report.Formats {
		b, err := report.Render(a.Report, format, "en")
		if err != nil {
			return err
		}
		rendered += len(b)
	}
	t2 := time.Now()
	t1 := after.at
	ev := a.Report.Evidence
	res.Bytes, res.Lines = ev.Bytes, ev.Lines
	res.IngestS, res.AfterS = t1.Sub(t0).Seconds(), t2.Sub(t1).Seconds()
	res.Check = fmt.Sprintf("%d findings, %d rules, %d bytes rendered; ingest %.2fs, after ingest %.2fs",
		len(a.Report.Findings), len(a.Report.Rules), rendered, res.IngestS, res.AfterS)
	return nil
}

// afterIngest is the pipeline's progress: it notes when detection begins,
// which is where ingest is over.
type afterIngest struct{ at time.Time }

func (p *afterIngest) Stage(name string, _ int64) {
	noteLiveHeap()
	if os.Getenv("ANALYZEBENCH_STAGES") != "" {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Fprintf(os.Stderr, "stage %q: heap %.1f MiB, %d GCs; %s\n", name, float64(ms.HeapAlloc)/(1<<20), ms.NumGC, rssSplit())
	}
	if name == "detecting" && p.at.IsZero() {
		p.at = time.Now()
		if f := os.Getenv("ANALYZEBENCH_INGESTHEAP"); f != "" {
			heapProfile(f)
		}
	}
}

func (p *afterIngest) Read(int64) {}

// profile starts the profiles the environment asks for, over the whole
// analysis (ingest included): ANALYZEBENCH_CPUPROFILE=FILE a CPU profile,
// ANALYZEBENCH_MEMPROFILE=FILE the allocations (every 64 KiB allocated is
// sampled, for go tool pprof -sample_index=alloc_space or inuse_space).
func profile() (stop func(), err error) {
	var cpu *os.File
	if p := os.Getenv("ANALYZEBENCH_CPUPROFILE"); p != "" {
		if cpu, err = os.Create(p); err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			return nil, err
		}
	}
	mem := os.Getenv("ANALYZEBENCH_MEMPROFILE")
	if mem != "" {
		runtime.MemProfileRate = 64 << 10
	}
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
		if mem != "" {
			if f, err := os.Create(mem); err == nil {
				pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}
	}, nil
}

// heapProfile writes the live heap (after a collection) to file: with
// ANALYZEBENCH_INGESTHEAP=FILE, what ingest leaves live for detection.
func heapProfile(file string) {
	runtime.GC()
	if f, err := os.Create(file); err == nil {
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
}

// rssSplit is this process's resident memory by kind, from /proc: RssFile
// is the binary's own pages (and other mapped files), RssAnon the heap,
// stacks and the runtime's own.
func rssSplit() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, k := range []string{"VmRSS:", "RssAnon:", "RssFile:", "VmHWM:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				out = append(out, k+" "+strings.TrimSpace(v))
			}
		}
	}
	return strings.Join(out, ", ")
}

// firstTime reads the time of a log's first line.
func firstTime(path string) (time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	var first time.Time
	errStop := errors.New("stop")
	_, err = accesslog.ReadReader(context.Background(), path, io.LimitReader(f, 64<<10), accesslog.Options{Workers: 1}, nil,
		func(b []sources.Request) error {
			first = b[0].Time
			return errStop
		})
	if first.IsZero() {
		return first, fmt.Errorf("%s: no request in its first 64 KiB (%v)", path, err)
	}
	return first, nil
}
