package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"text/tabwriter"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchref"
	"github.com/aftermath-forensics/aftermath/detect"
)

// The whole-analysis benchmark (issue 26): all of analyze (cmd/analyzebench:
// ingest, detectors, report, rules with their backtest, rendering) against the
// bare reference loop over the same log, at 1 and 2 cores, alternating, each
// run in its own process. What it costs is CPU time: MB per CPU-second is the
// speed of one core, whatever else the machine runs, so the ratio of the two
// is the share of a bare parser's speed the analysis keeps. Peak RSS is each
// process's own (VmHWM).

// analysisBudget is issue 26's budget at 1 core: the analysis at least half
// the bare loop's speed per core, under 80 MiB.
const (
	analysisMinRatio = 0.5
	analysisMaxRSS   = 80.0
)

func analysisCmd(args []string) error {
	fs := flag.NewFlagSet("analysis", flag.ExitOnError)
	plain := fs.String("plain", "", "the generated log")
	reps := fs.Int("reps", 3, "runs of each (medians are printed)")
	big := fs.String("big", "", "the -plain log's lines each written several times (gen -repeat-to 4GiB), for the flat-memory check of the analysis (optional)")
	analyzeBin := fs.String("analyze", "", "the analyzebench binary (default: beside this one)")
	bareBin := fs.String("bareloop", "", "the bareloop binary (default: beside this one)")
	fs.Parse(args)
	if *plain == "" {
		return errors.New("analysis: -plain is required")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, b := range []struct {
		path *string
		name string
	}{{analyzeBin, "analyzebench"}, {bareBin, "bareloop"}} {
		if err := besideThisExists(b.path, self, b.name); err != nil {
			return fmt.Errorf("analysis: %w", err)
		}
	}
	analysis := func(procs int, file string) func() *exec.Cmd {
		return func() *exec.Cmd { return withProcs(exec.Command(*analyzeBin, file), procs) }
	}
	ref := func(procs int) func() *exec.Cmd {
		return func() *exec.Cmd {
			return withProcs(exec.Command(*bareBin, "-extractor", string(benchref.JSONParser), *plain), procs)
		}
	}
	readers := []reader{
		{name: "analysis, 1 core", reps: *reps, self: true, cmd: analysis(1, *plain)},
		{name: "reference loop, 1 core", reps: *reps, self: true, cmd: ref(1)},
		{name: "analysis, 2 cores", reps: *reps, self: true, cmd: analysis(2, *plain)},
		{name: "reference loop, 2 cores", reps: *reps, self: true, cmd: ref(2)},
	}
	size := fileSize(*plain)
	results, err := alternate(readers, size)
	if err != nil {
		return err
	}
	var bigRes []benchref.Result
	if *big != "" {
		// The same analysis at 1 core over the log and a larger one of the
		// same traffic.
		bigRes, err = flatMemory([]string{*plain, *big}, func(f string) reader {
			return reader{name: "analysis " + f, self: true, cmd: analysis(1, f)}
		})
		if err != nil {
			return err
		}
	}
	printAnalysis(os.Stdout, readers, results, bigRes, size)
	return nil
}

func printAnalysis(w io.Writer, readers []reader, results [][]benchref.Result, big []benchref.Result, size int64) {
	type summary struct{ cpuMBps, wallMBps, rss, faults float64 }
	sum := map[string]summary{}
	runs := map[string][]benchref.Result{}
	var lines int64
	for i, r := range readers {
		runs[r.name] = results[i]
		var walls, cpus, rss, faults []float64
		for _, x := range results[i] {
			walls, cpus, rss = append(walls, x.WallS), append(cpus, x.CPUS), append(rss, float64(x.RSSKiB)/1024)
			faults = append(faults, float64(x.Faults))
			lines = x.Lines
		}
		sum[r.name] = summary{cpuMBps: float64(size) / detect.Median(cpus) / 1e6, wallMBps: float64(size) / detect.Median(walls) / 1e6,
			rss: slices.Max(rss), faults: detect.Median(faults)}
	}
	fmt.Fprintf(w, "\nwhole analysis: generated Caddy log, %.0f MB, %d lines; %d CPUs, load average %s\n",
		float64(size)/1e6, lines, runtime.NumCPU(), loadavg())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cores\tanalysis MB/s per core (CPU)\tbare loop MB/s per core (CPU)\tratio (median of rounds)\tanalysis MB/s (wall)\tanalysis peak RSS MiB\tbare loop peak RSS MiB\tanalysis page faults\tbare loop page faults\t")
	for _, n := range []string{"1 core", "2 cores"} {
		a, b := sum["analysis, "+n], sum["reference loop, "+n]
		ratio := detect.Median(benchref.RoundRatios(runs["analysis, "+n], runs["reference loop, "+n]))
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t\n", n, a.cpuMBps, b.cpuMBps, ratio, a.wallMBps, a.rss, b.rss, a.faults, b.faults)
	}
	tw.Flush()

	fmt.Fprintln(w, "\ntargets (issue 26)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	verdict := func(ok bool) string {
		if ok {
			return "holds"
		}
		return "DOES NOT HOLD"
	}
	a1 := sum["analysis, 1 core"]
	x := detect.Median(benchref.RoundRatios(runs["analysis, 1 core"], runs["reference loop, 1 core"]))
	fmt.Fprintf(tw, "1 core: analysis / bare loop, per core (CPU)\t%.2f\t>= %.1f\t%s\n", x, analysisMinRatio, verdict(x >= analysisMinRatio))
	fmt.Fprintf(tw, "1 core: analysis peak RSS, MiB (%.0f MB log)\t%.0f\t< %.0f\t%s\n", float64(size)/1e6, a1.rss, analysisMaxRSS, verdict(a1.rss < analysisMaxRSS))
	if len(big) >= 2 {
		// The big log is the small one's lines written several times each:
		// the same distinct keys at more lines (bench.sh). The live heap is
		// what the analysis holds; peak RSS adds the garbage not yet
		// collected, which a longer run lets grow to the collector's goal
		// (twice the live heap, GOGC=100) where a short one ends first.
		var small, large float64
		times := float64(big[1].Lines) / float64(max(big[0].Lines, 1))
		x, small, large = flatPeaks(big)
		fmt.Fprintf(tw, "analysis peak RSS %.0f MB log (the same keys, %.0fx the lines) / %.0f MB log\t%.2f\tflat (<= 1.15)\t%s\t%.0f MiB vs %.0f MiB\n",
			float64(big[1].Bytes)/1e6, times, float64(big[0].Bytes)/1e6, x, verdict(x <= 1.15), large, small)
		fmt.Fprintf(tw, "analysis peak RSS, MiB (%.0f MB log)\t%.0f\t< %.0f\t%s\n", float64(big[1].Bytes)/1e6, large, analysisMaxRSS, verdict(large < analysisMaxRSS))
		x, small, large = flatRatio(big, func(r benchref.Result) float64 { return r.LiveMiB })
		fmt.Fprintf(tw, "analysis live heap %.0f MB log / %.0f MB log\t%.2f\tflat (<= 1.15)\t%s\t%.1f MiB vs %.1f MiB\n",
			float64(big[1].Bytes)/1e6, float64(big[0].Bytes)/1e6, x, verdict(x <= 1.15), large, small)
	}
	tw.Flush()
}
