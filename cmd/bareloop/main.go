// Command bareloop is the bare reference loop of the benchmarks (make bench):
// benchref.Count over one Caddy log, at GOMAXPROCS cores, reporting its
// benchref.Result as JSON.
//
// It is a program of its own, linking benchref alone, because the yardstick is
// a bare parser: a 4 MB binary that starts in a few milliseconds. Run inside
// cmd/ingestbench, which links all of aftermath (Caddy, Chroma, the AWS SDK),
// the same loop paid about 0.1 s of CPU and 50 MiB of start-up before its
// first line (256 MB log at 1 core: 0.55 s of CPU against 0.44 s here), and
// every ratio to it looked about a fifth better than it was.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchref"
)

func main() {
	extractor := flag.String("extractor", string(benchref.JSONParser), "how fields are read: jsonparser or fastjson")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: bareloop [-extractor jsonparser|fastjson] ACCESS_LOG")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), benchref.Extractor(*extractor)); err != nil {
		fmt.Fprintln(os.Stderr, "bareloop:", err)
		os.Exit(1)
	}
}

func run(path string, ex benchref.Extractor) error {
	if ex != benchref.JSONParser && ex != benchref.FastJSON {
		return fmt.Errorf("-extractor %q: jsonparser or fastjson", ex)
	}
	start := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	c, err := benchref.Count(f, runtime.GOMAXPROCS(0), ex)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	res := benchref.Result{What: "bare loop (" + string(ex) + ")", Procs: runtime.GOMAXPROCS(0), Bytes: fi.Size(), Lines: c.Lines,
		Check: fmt.Sprintf("%d requests, %d bad, %d statuses, %d addresses, %d minutes",
			c.Requests, c.Bad, len(c.ByStatus), len(c.ByIP), len(c.ByMinute))}
	res.Measure(start)
	return json.NewEncoder(os.Stdout).Encode(res)
}
