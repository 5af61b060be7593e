// Command ingestbench measures aftermath's ingest against its yardsticks on one
// large generated Caddy log (issue 9); .ci/bench.sh (make bench) drives it.
//
//	ingestbench gen   -size 1GiB -out FILE [-gzip FILE.gz]   write the log (streaming); -repeat-to 4GiB
//	                                                         writes each line as often as fits: the
//	                                                         same keys at more lines
//	ingestbench run   FILE                                     one measured ingest (in this process)
//	ingestbench table -plain FILE -gzip FILE.gz [-reps N]      alternate and repeat every reader
//	                                                         in child processes; print the table
//	ingestbench analysis -plain FILE [-big FILE] [-reps N]   all of analyze (analyzebench) beside the
//	                                                         reference loop at 1 and 2 cores: the
//	                                                         ratio per core and peak RSS (issue 26)
//
// Each measured read runs in its own process, so that its peak RSS (getrusage's
// maxrss) and CPU time (user+sys) are its own. The table gives medians: on a
// shared machine, CPU time says what the work costs, wall time what the user
// waits.
//
// It lives under cmd/ because like the CLI it wires the pipeline together
// (detect's ingest): only cmd may import every layer. Beside it are the log
// generator (benchlog), which the layers' own tests and benchmarks use for
// their large logs too, and the yardstick (benchref), which imports no layer
// of aftermath. The yardstick runs as cmd/bareloop, a program of its own: in
// this one it would pay aftermath's start-up. The tables find bareloop and
// analyzebench beside this program. None of them is shipped; make build
// builds cmd/aftermath alone.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/aftermath-forensics/aftermath/analysis"
	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchlog"
	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchref"
	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = genCmd(os.Args[2:])
	case "run":
		err = runCmd(os.Args[2:])
	case "table":
		err = tableCmd(os.Args[2:])
	case "analysis":
		err = analysisCmd(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ingestbench:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: ingestbench gen|run|table|analysis [flags]; see the package documentation")
	os.Exit(2)
}

// ---- gen --------------------------------------------------------------------------

func genCmd(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	size := fs.String("size", "1GiB", "bytes to write (suffixes KiB, MiB, GiB)")
	out := fs.String("out", "", "plain log to write")
	gz := fs.String("gzip", "", "also write a gzip copy here (default level, as Caddy's log roller)")
	seed := fs.Uint64("seed", 1, "traffic seed")
	span := fs.Duration("span", 24*time.Hour, "time the log covers")
	repeatTo := fs.String("repeat-to", "", "write each line as many times as fit in this size: the traffic of the -size log (its addresses, pages, fingerprints, minutes) at more lines, for the flat-memory check")
	fs.Parse(args)
	n, err := parseSize(*size)
	if err != nil || *out == "" {
		return fmt.Errorf("gen: -size %q and -out are required (%v)", *size, err)
	}
	repeat := 1
	if *repeatTo != "" {
		to, err := parseSize(*repeatTo)
		if err != nil || to < n {
			return fmt.Errorf("gen: -repeat-to %q: want a size of at least -size %q (%v)", *repeatTo, *size, err)
		}
		repeat = int(to / n)
	}
	tmp := *out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := io.Writer(f)
	var zf *os.File
	var zw *gzip.Writer
	if *gz != "" {
		if zf, err = os.Create(*gz + ".tmp"); err != nil {
			return err
		}
		zw = gzip.NewWriter(zf)
		w = io.MultiWriter(f, zw)
	}
	t0 := time.Now()
	st, err := benchlog.Generate(w, benchlog.GenOptions{Size: n, Seed: *seed, Span: *span, Repeat: repeat})
	if err == nil && zw != nil {
		err = zw.Close()
	}
	for _, c := range []*os.File{f, zf} {
		if c != nil {
			if cerr := c.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		return fmt.Errorf("gen %s: %w", *out, err)
	}
	if err := os.Rename(tmp, *out); err != nil {
		return err
	}
	if *gz != "" {
		if err := os.Rename(*gz+".tmp", *gz); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "wrote %s: %d lines, %.0f MB (%.0f bytes a line, %.0f%% HTTPS), %s to %s, in %s\n",
		*out, st.Lines, float64(st.Bytes)/1e6, float64(st.Bytes)/float64(st.Lines), 100*float64(st.HTTPS)/float64(st.Lines),
		st.First.Format(time.RFC3339), st.Last.Format(time.RFC3339), time.Since(t0).Round(time.Second))
	return nil
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return int64(f * float64(mult)), nil
}

// ---- run --------------------------------------------------------------------------

func runCmd(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile here")
	fs.Parse(args)
	if fs.NArg() != 1 {
		return errors.New("run: one file")
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	path := fs.Arg(0)
	t0 := time.Now()
	res := benchref.Result{What: "ingest", Procs: runtime.GOMAXPROCS(0)}
	// analyze's load (analysis.Load) of the access log, keeping the
	// requests for the rules, with the window over the whole log: every
	// request's client detail is kept (the most work and memory).
	m := bundle.Manifest{Timezone: "UTC", Site: sources.Site{ClientTimeoutS: 10, HealthURI: "/healthz.php", LoggedInCookie: "wikiUserID="}}
	m.Window.From, m.Window.To = time.Unix(0, 0).UTC(), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	loaded, ev, err := analysis.Load(context.Background(), evidence.Inputs{Manifest: m, Access: []string{path}, KeepRequests: true}, time.UTC)
	if err != nil {
		return err
	}
	defer loaded.Close()
	traffic := ev.Traffic
	if traffic == nil {
		return fmt.Errorf("%s: no request read", path)
	}
	res.Bytes, res.Lines = loaded.Access.Bytes, loaded.Access.Lines
	ips := 0
	for _, c := range traffic.Clusters() {
		ips += len(c.IPs)
	}
	res.Check = fmt.Sprintf("%d requests, %d skipped, %d minutes, %d fingerprints, %d address entries",
		traffic.Total(), loaded.SkippedLines, len(traffic.Minutes()), len(traffic.Clusters()), ips)
	res.Measure(t0)
	return json.NewEncoder(os.Stdout).Encode(res)
}

// ---- table ------------------------------------------------------------------------

// besideThis is path, or where none is given, the program name in the
// directory of this one (self): .ci/bench.sh builds them side by side.
func besideThis(path, self, name string) string {
	if path != "" {
		return path
	}
	return filepath.Join(filepath.Dir(self), name)
}

// besideThisExists sets *path as besideThis does and checks that the program
// is there.
func besideThisExists(path *string, self, name string) error {
	*path = besideThis(*path, self, name)
	if _, err := os.Stat(*path); err != nil {
		return fmt.Errorf("%w (go build -o %s ./cmd/%s)", err, *path, name)
	}
	return nil
}

// withProcs runs c at procs cores (GOMAXPROCS).
func withProcs(c *exec.Cmd, procs int) *exec.Cmd {
	c.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
	return c
}

// caddyNoTLS is GoAccess 1.7's predefined CADDY format with its "tls" object
// left out (GoAccess's JSON parser is much slower on lines whose tls it must match).
const caddyNoTLS = `{ "ts": "%x.%^", "request": { "remote_ip": "%h", "proto":"%H", "method": "%m", "host": "%v", "uri": "%U", "headers": {"User-Agent": ["%u"], "Referer": ["%R"] } }, "duration": "%T", "size": "%b","status": "%s", "resp_headers": { "Content-Type": ["%M"] } }`

type reader struct {
	name string
	reps int
	cmd  func() *exec.Cmd
	self bool // a child ingestbench that reports its own result
	gzip bool
}

func tableCmd(args []string) error {
	fs := flag.NewFlagSet("table", flag.ExitOnError)
	plain := fs.String("plain", "", "the generated log")
	gz := fs.String("gzip", "", "its gzip copy (optional)")
	reps := fs.Int("reps", 3, "runs of each reader (medians are printed)")
	gaReps := fs.Int("goaccess-reps", 1, "runs of each GoAccess mode (they are slow)")
	big := fs.String("big", "", "the -plain log's lines each written several times (gen -repeat-to 4GiB), for the flat-memory check (optional)")
	analyzeBin := fs.String("analyze", "", "the analyzebench binary (default: beside this one)")
	bareBin := fs.String("bareloop", "", "the bareloop binary (default: beside this one)")
	fs.Parse(args)
	if *plain == "" {
		return errors.New("table: -plain is required")
	}
	size := fileSize(*plain)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	*analyzeBin = besideThis(*analyzeBin, self, "analyzebench")
	if err := besideThisExists(bareBin, self, "bareloop"); err != nil {
		return fmt.Errorf("table: %w", err)
	}
	ingest := func(procs int, file string) func() *exec.Cmd {
		return func() *exec.Cmd { return withProcs(exec.Command(self, "run", file), procs) }
	}
	bare := func(ex benchref.Extractor, procs int) func() *exec.Cmd {
		return func() *exec.Cmd { return withProcs(exec.Command(*bareBin, "-extractor", string(ex), *plain), procs) }
	}
	readers := []reader{
		{name: "aftermath ingest, 1 core", reps: *reps, self: true, cmd: ingest(1, *plain)},
		{name: "reference loop, 1 core", reps: *reps, self: true, cmd: bare(benchref.JSONParser, 1)},
		{name: "reference loop (fastjson), 1 core", reps: *reps, self: true, cmd: bare(benchref.FastJSON, 1)},
		{name: "aftermath ingest, 2 cores", reps: *reps, self: true, cmd: ingest(2, *plain)},
		{name: "reference loop, 2 cores", reps: *reps, self: true, cmd: bare(benchref.JSONParser, 2)},
	}
	if *gz != "" {
		readers = append(readers,
			reader{name: "aftermath ingest, gzip, 2 cores", reps: *reps, self: true, gzip: true, cmd: ingest(2, *gz)},
			reader{name: "zcat > /dev/null", reps: *reps, gzip: true, cmd: func() *exec.Cmd { return exec.Command("zcat", *gz) }})
	}
	readers = append(readers, reader{name: "cat > /dev/null", reps: *reps, cmd: func() *exec.Cmd { return exec.Command("cat", *plain) }})
	if _, err := os.Stat(*analyzeBin); err != nil {
		fmt.Fprintf(os.Stderr, "no %s: the analyze row is skipped (go build -o %[1]s ./cmd/analyzebench)\n", *analyzeBin)
	} else {
		readers = append(readers, reader{name: "aftermath analyze (all of it), 2 cores", reps: *reps, self: true, cmd: func() *exec.Cmd {
			return withProcs(exec.Command(*analyzeBin, *plain), 2)
		}})
	}
	tmp, err := os.MkdirTemp("", "ingestbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := exec.LookPath("goaccess"); err != nil {
		fmt.Fprintln(os.Stderr, "GoAccess is not installed: its rows are skipped (apt-get install goaccess)")
	} else {
		ga := func(format string) func() *exec.Cmd {
			return func() *exec.Cmd {
				// Output to an HTML file: GoAccess needs a report to write, and
				// writing it is a small part of its time.
				return exec.Command("goaccess", *plain, "--log-format="+format, "--date-format=%s", "--time-format=%s",
					"--no-progress", "--no-global-config", "-o", filepath.Join(tmp, "goaccess.html"))
			}
		}
		readers = append(readers,
			reader{name: "GoAccess --log-format=CADDY", reps: *gaReps, cmd: ga("CADDY")},
			reader{name: "GoAccess, Caddy format without tls", reps: *gaReps, cmd: ga(caddyNoTLS)})
	}
	results, err := alternate(readers, size)
	if err != nil {
		return err
	}
	var bigRes []benchref.Result
	if *big != "" {
		bigRes, err = flatMemory([]string{*plain, *big}, func(f string) reader {
			return reader{name: "ingest " + f, self: true, cmd: ingest(2, f)}
		})
		if err != nil {
			return err
		}
	}
	printTable(os.Stdout, readers, results, bigRes, size)
	return nil
}

// alternate runs each reader its reps times, one run of each per round, so
// that a change in the machine's load falls on all of them; it prints each
// run to stderr.
func alternate(readers []reader, size int64) ([][]benchref.Result, error) {
	results := make([][]benchref.Result, len(readers))
	maxReps := 0
	for _, r := range readers {
		maxReps = max(maxReps, r.reps)
	}
	for round := range maxReps {
		for i, r := range readers {
			if round >= r.reps {
				continue
			}
			res, err := measure(r, size)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.name, err)
			}
			fmt.Fprintf(os.Stderr, "round %d  %-38s %7.2fs wall %7.2fs cpu %6.0f MiB  %s\n",
				round+1, r.name, res.WallS, res.CPUS, float64(res.RSSKiB)/1024, res.Check)
			results[i] = append(results[i], res)
		}
	}
	return results, nil
}

// flatMemory runs the reader of each file twice, alternating: memory that
// grows with lines, not with distinct keys, shows as a larger peak on the
// larger file.
func flatMemory(files []string, of func(file string) reader) ([]benchref.Result, error) {
	var out []benchref.Result
	for range 2 {
		for _, f := range files {
			res, err := measure(of(f), fileSize(f))
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(os.Stderr, "flat memory  %-40s %7.2fs wall %7.2fs cpu %6.0f MiB  %s\n", f, res.WallS, res.CPUS, float64(res.RSSKiB)/1024, res.Check)
			out = append(out, res)
		}
	}
	return out, nil
}

// flatPeaks reads flatMemory's runs (the smaller file first in each pair):
// the larger file's peak RSS over the smaller's, and both peaks in MiB.
func flatPeaks(big []benchref.Result) (ratio, small, large float64) {
	return flatRatio(big, func(r benchref.Result) float64 { return float64(r.RSSKiB) / 1024 })
}

// flatRatio is flatPeaks for any measure of a run (MiB): the larger file's
// largest over the smaller's.
func flatRatio(big []benchref.Result, mib func(benchref.Result) float64) (ratio, small, large float64) {
	for i, b := range big {
		if i%2 == 0 {
			small = max(small, mib(b))
		} else {
			large = max(large, mib(b))
		}
	}
	return large / small, small, large
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// measure runs one reader to completion and returns its wall and CPU time and
// peak RSS (from the kernel's accounting of the child).
func measure(r reader, size int64) (benchref.Result, error) {
	cmd := r.cmd()
	// Another program's peak RSS comes from GNU time, whose own small maxrss
	// is what its child inherits (see vmHWM); ours would mask the child's.
	var rssFile string
	if gnuTime != "" && !r.self {
		f, err := os.CreateTemp("", "ingestbench-rss-")
		if err != nil {
			return benchref.Result{}, err
		}
		f.Close()
		rssFile = f.Name()
		defer os.Remove(rssFile)
		cmd = exec.Command(gnuTime, append([]string{"-f", "%M", "-o", rssFile}, cmd.Args...)...)
	}
	var stdout, stderr bytes.Buffer
	if r.self {
		cmd.Stdout = &stdout
	} else {
		cmd.Stdout = io.Discard
	}
	cmd.Stderr = &stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return benchref.Result{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	wall := time.Since(t0).Seconds()
	var res benchref.Result
	if r.self {
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			return benchref.Result{}, fmt.Errorf("child output %q: %w", stdout.String(), err)
		}
	} else {
		res.Bytes = size
		if r.gzip {
			res.Bytes = 0 // filled from the plain file's size by the caller's table
		}
	}
	res.WallS = wall // the parent's clock: process start-up included, for every reader alike
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.CPUS = tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
		if !r.self {
			res.RSSKiB = ru.Maxrss
		}
	}
	if rssFile != "" {
		if b, err := os.ReadFile(rssFile); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				res.RSSKiB = n
			}
		}
	}
	return res, nil
}

func tvSeconds(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }

// gnuTime is GNU time's path, if installed.
var gnuTime = func() string {
	if p, err := exec.LookPath("/usr/bin/time"); err == nil {
		return p
	}
	return ""
}()

type row struct {
	name                     string
	n                        int
	mbps, cpuMBps, lps, rssM float64
	wall, cpu                float64
}

func printTable(w io.Writer, readers []reader, results [][]benchref.Result, big []benchref.Result, plainSize int64) {
	var lines int64
	for i, r := range readers {
		if r.self && !r.gzip && len(results[i]) > 0 {
			lines = results[i][0].Lines
		}
	}
	rows := map[string]row{}
	var order []string
	for i, r := range readers {
		rs := results[i]
		if len(rs) == 0 {
			continue
		}
		var walls, cpus, rss []float64
		for _, x := range rs {
			walls = append(walls, x.WallS)
			cpus = append(cpus, x.CPUS)
			rss = append(rss, float64(x.RSSKiB)/1024)
		}
		wall, cpu := detect.Median(walls), detect.Median(cpus)
		bytes := float64(plainSize) // every reader reads (or decompresses to) the plain log's bytes
		rw := row{name: r.name, n: len(rs), wall: wall, cpu: cpu, mbps: bytes / wall / 1e6, cpuMBps: bytes / cpu / 1e6,
			lps: float64(lines) / wall, rssM: slices.Max(rss)}
		rows[r.name] = rw
		order = append(order, r.name)
	}
	ga := rows["GoAccess --log-format=CADDY"]
	fmt.Fprintf(w, "\n%s, %.0f MB, %d lines (%.0f bytes a line); %d CPUs, load average %s\n",
		"generated Caddy log", float64(plainSize)/1e6, lines, float64(plainSize)/float64(max(lines, 1)), runtime.NumCPU(), loadavg())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "reader\truns\tMB/s (wall)\tMB/s (CPU)\tlines/s\tpeak RSS MiB\tx GoAccess\t")
	for _, name := range order {
		r := rows[name]
		xga := "-"
		if ga.mbps > 0 {
			xga = fmt.Sprintf("%.1f", r.mbps/ga.mbps)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%s\t\n", r.name, r.n, r.mbps, r.cpuMBps, r.lps, r.rssM, xga)
	}
	tw.Flush()

	fmt.Fprintln(w, "\ntargets (issue 9)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	check := func(name string, got float64, want string, ok bool, note string) {
		verdict := "holds"
		if !ok {
			verdict = "DOES NOT HOLD"
		}
		if math.IsNaN(got) || math.IsInf(got, 0) {
			verdict, note = "not measured", ""
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%s\t%s\t%s\n", name, got, want, verdict, note)
	}
	i1, r1 := rows["aftermath ingest, 1 core"], rows["reference loop, 1 core"]
	i2 := rows["aftermath ingest, 2 cores"]
	gzr, zc := rows["aftermath ingest, gzip, 2 cores"], rows["zcat > /dev/null"]
	x := i1.mbps / r1.mbps
	check("1 core: ingest / reference loop (wall)", x, ">= 0.5", x >= 0.5, fmt.Sprintf("CPU-time ratio %.2f", i1.cpuMBps/r1.cpuMBps))
	x = i2.mbps / i1.mbps
	check("2 cores / 1 core (ingest, wall)", x, ">= 1.6", x >= 1.6, fmt.Sprintf("the reference loop: %.2f", rows["reference loop, 2 cores"].mbps/r1.mbps))
	if zc.n > 0 {
		x = gzr.wall / zc.wall
		check("gzip: ingest time / zcat time", x, "<= 1.3", x <= 1.3, "")
	}
	if ga.n > 0 {
		x = i2.mbps / ga.mbps
		check("ingest (2 cores) / GoAccess CADDY", x, ">= 40", x >= 40, "")
	}
	var ingS, afterS []float64
	for i, r := range readers {
		if r.name == "aftermath analyze (all of it), 2 cores" {
			for _, x := range results[i] {
				ingS, afterS = append(ingS, x.IngestS), append(afterS, x.AfterS)
			}
		}
	}
	if len(ingS) > 0 {
		x = detect.Median(afterS) / detect.Median(ingS)
		check("analyze: after ingest / ingest (time)", x, "< 1", x < 1, fmt.Sprintf("%.2fs after, %.2fs ingest (detectors, report, rules backtest, rendering)", detect.Median(afterS), detect.Median(ingS)))
	}
	peak := max(i1.rssM, i2.rssM, gzr.rssM)
	check(fmt.Sprintf("ingest peak RSS, MiB (%.0f MB log)", float64(plainSize)/1e6), peak, "<= 80", peak <= 80, "")
	if len(big) >= 2 {
		var small, large float64
		x, small, large = flatPeaks(big)
		times := float64(big[1].Lines) / float64(max(big[0].Lines, 1))
		check(fmt.Sprintf("peak RSS %.0f MB log (the same keys, %.0fx the lines) / %.0f MB log", float64(big[1].Bytes)/1e6, times, float64(big[0].Bytes)/1e6), x, "flat (<= 1.15)", x <= 1.15,
			fmt.Sprintf("%.0f MiB vs %.0f MiB", large, small))
	}
	tw.Flush()
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
