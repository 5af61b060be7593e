package accesslog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// TestOverlap reads the sample split and repeated the ways people give logs
// twice, and checks that every request counts once and the overlap is named.
func TestOverlap(t *testing.T) {
	lines := sampleLines(t)
	join := func(ls []string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }
	otherPort := strings.Replace(lines[3], `"remote_port":"`, `"remote_port":"1`, 1)
	later := tsRE.ReplaceAllLiteralString(lines[3], `"ts":1795966999.5`)
	tests := []struct {
		name     string
		files    map[string][]byte // written in the temporary directory
		order    []string
		requests int64
		dups     []int64 // per input
		notes    []string
		// readOrder is the order the inputs are read in, when not the given one
		readOrder []string
	}{
		{name: "same file twice", files: map[string][]byte{"access.log": join(lines)}, order: []string{"access.log", "access.log"},
			requests: 27, dups: []int64{0, 27}, notes: []string{"access.log: all 27 of its requests were also in DIR/access.log (same time, client address and port, URI, status and duration): counted once"}},
		{name: "plain and gzipped", files: map[string][]byte{"access.log": join(lines), "access.log.gz": gzipped(t, join(lines))},
			order: []string{"access.log.gz", "access.log"}, requests: 27, dups: []int64{0, 27},
			notes: []string{"access.log: all 27 of its requests were also in DIR/access.log.gz"}},
		{name: "overlapping rotations, oldest first", files: map[string][]byte{"access.log.1": join(lines[:18]), "access.log": join(lines[10:])},
			order: []string{"access.log.1", "access.log"}, requests: 27, dups: []int64{0, 8},
			notes: []string{"access.log: 8 of its requests were also in DIR/access.log.1"}},
		// Given newest first (as a shell lists them), they are read oldest
		// first, so that requests come in time order.
		{name: "overlapping rotations, newest first", files: map[string][]byte{"access.log.1": join(lines[:18]), "access.log": join(lines[10:])},
			order: []string{"access.log", "access.log.1"}, requests: 27, dups: []int64{0, 8}, readOrder: []string{"access.log.1", "access.log"},
			notes: []string{"access.log: 8 of its requests were also in DIR/access.log.1"}},
		{name: "three rotations, newest first", files: map[string][]byte{"a.log.2.gz": gzipped(t, join(lines[:9])), "a.log.1": join(lines[9:18]), "a.log": join(lines[18:])},
			order: []string{"a.log", "a.log.1", "a.log.2.gz"}, requests: 27, dups: []int64{0, 0, 0}, readOrder: []string{"a.log.2.gz", "a.log.1", "a.log"}},
		{name: "rotations without overlap", files: map[string][]byte{"access.log.1": join(lines[:10]), "access.log": join(lines[10:])},
			order: []string{"access.log.1", "access.log"}, requests: 27, dups: []int64{0, 0}},
		{name: "the same log as Docker wrote it", files: map[string][]byte{"access.log": join(lines[:20]), "docker.json": join(mapLines(lines[5:], docker))},
			order: []string{"access.log", "docker.json"}, requests: 27, dups: []int64{0, 15},
			notes: []string{"docker.json: 15 of its requests were also in DIR/access.log", "22 Docker json-file lines"}},
		{name: "three copies", files: map[string][]byte{"a.log": join(lines), "b.log": join(lines[:9])},
			order: []string{"a.log", "b.log", "a.log"}, requests: 27, dups: []int64{0, 9, 27},
			notes: []string{"b.log: all 9 of its requests were also in DIR/a.log", "a.log: all 27 of its requests were also in DIR/a.log"}},
		// The obvious answer is wrong: the same request from another port, or
		// the same request later, is another request.
		{name: "near duplicates are distinct", files: map[string][]byte{"a.log": join(lines[:5]), "b.log": join([]string{otherPort, later, lines[3]})},
			order: []string{"a.log", "b.log"}, requests: 7, dups: []int64{0, 1},
			notes: []string{"b.log: 1 of its requests were also in DIR/a.log"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, b := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var paths []string
			for _, name := range tt.order {
				paths = append(paths, filepath.Join(dir, name))
			}
			for _, workers := range []int{1, 3} {
				var got []sources.Request
				st, err := Read(context.Background(), paths, Options{Workers: workers}, nil, func(b []sources.Request) error {
					got = append(got, b...)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				seen := map[string]int{}
				for _, r := range got {
					seen[fmt.Sprint(r.Time.UnixMicro(), r.ClientIP, r.Path, r.Query, r.Status, r.Duration)]++
				}
				for i := 1; i < len(got) && tt.readOrder != nil; i++ {
					if got[i].Time.Before(got[i-1].Time) {
						t.Errorf("workers %d: request %d at %v comes after one at %v", workers, i, got[i].Time, got[i-1].Time)
						break
					}
				}
				if tt.readOrder != nil {
					var names []string
					for _, in := range st.Inputs {
						names = append(names, filepath.Base(in.Name))
					}
					if fmt.Sprint(names) != fmt.Sprint(tt.readOrder) {
						t.Errorf("read %v, want %v", names, tt.readOrder)
					}
				}
				if st.Requests != tt.requests || int64(len(got)) != tt.requests {
					t.Errorf("workers %d: %d requests delivered (stats %d), want %d", workers, len(got), st.Requests, tt.requests)
				}
				var dups []int64
				total := int64(0)
				for _, in := range st.Inputs {
					dups = append(dups, in.Duplicates)
					total += in.Duplicates
				}
				if fmt.Sprint(dups) != fmt.Sprint(tt.dups) || st.Duplicates != total {
					t.Errorf("workers %d: duplicates %v (total %d), want %v", workers, dups, st.Duplicates, tt.dups)
				}
				var want []string
				for _, n := range tt.notes {
					want = append(want, strings.ReplaceAll(n, "DIR", dir))
				}
				checkNotes(t, st.Notes, want)
			}
		})
	}
}

func mapLines(ls []string, f func(string) string) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = f(l)
	}
	return out
}

// TestOverlapLab reads the real recording twice, the second time split into
// overlapping pieces: every request counts once.
func TestOverlapLab(t *testing.T) {
	labLog := testenv.LabIncident(t, "access/access.log.gz")
	st, err := Read(context.Background(), []string{labLog, labLog}, Options{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests != 16955 || st.Duplicates != 16955 {
		t.Errorf("%d requests, %d duplicates; want 16955 of each", st.Requests, st.Duplicates)
	}
}

// BenchmarkOverlap reads a generated log once, twice (the second copy all
// duplicates), and as one file holding it twice (all repeats within the
// file), and reports the peak heap seen during the read: the overlap check
// must add about the same few MiB however long the log, since only a few
// minutes of fingerprints are in memory at a time (the rest wait on disk, 16
// bytes a line).
func BenchmarkOverlap(b *testing.B) {
	for _, n := range []int{20000, 80000} {
		dir := b.TempDir()
		path, twice := filepath.Join(dir, "access.log"), filepath.Join(dir, "twice.log")
		log := genLog(n, 5)
		if err := os.WriteFile(path, log, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(twice, append(append([]byte(nil), log...), log...), 0o644); err != nil {
			b.Fatal(err)
		}
		for _, copies := range []int{1, 2, -2} {
			name := fmt.Sprintf("lines=%d/copies=%d", n, copies)
			if copies < 0 {
				name = fmt.Sprintf("lines=%d/one-file-twice", n)
			}
			b.Run(name, func(b *testing.B) {
				paths := []string{path, path}[:max(copies, 1)]
				if copies < 0 {
					paths, copies = []string{twice}, 2
				}
				var peak uint64
				batches := 0
				var ms runtime.MemStats
				b.ReportAllocs()
				for b.Loop() {
					runtime.GC()
					st, err := Read(context.Background(), paths, Options{Workers: 1}, nil, func([]sources.Request) error {
						if batches++; batches%4 == 0 {
							runtime.ReadMemStats(&ms)
							peak = max(peak, ms.HeapInuse)
						}
						return nil
					})
					if err != nil || st.Requests != int64(n) || st.Duplicates != int64(n*(copies-1)) {
						b.Fatalf("err %v, %d requests, %d duplicates", err, st.Requests, st.Duplicates)
					}
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(copies*n), "ns/line")
			})
		}
	}
}

// TestRepeatedWithinOneFile: a request repeated within one input (a shipper
// that wrote lines twice, rotations concatenated into one file) counts once,
// and the input's notes say how many were repeated; the obvious answer is
// wrong for near repeats, and for whole-second times, where two real
// requests on one connection can share every field.
func TestRepeatedWithinOneFile(t *testing.T) {
	lines := sampleLines(t)
	join := func(ls ...[]string) []byte {
		var all []string
		for _, l := range ls {
			all = append(all, l...)
		}
		return []byte(strings.Join(all, "\n") + "\n")
	}
	otherPort := strings.Replace(lines[3], `"remote_port":"`, `"remote_port":"1`, 1)
	wall := func(ls []string) []string {
		return mapLines(ls, withTS(quoted("2006/01/02 15:04:05", time.UTC)))
	}
	tests := []struct {
		name     string
		files    map[string][]byte
		order    []string
		requests int64
		repeated []int64 // per input, in reading order
		note     string
	}{
		{name: "a line written twice in a row", files: map[string][]byte{"a.log": join(lines[:4], lines[3:4], lines[4:])},
			order: []string{"a.log"}, requests: 27, repeated: []int64{1},
			note: "a.log: 1 of its requests were repeated within it"},
		{name: "two overlapping rotations concatenated (time goes back)", files: map[string][]byte{"a.log": join(lines[:18], lines[10:])},
			order: []string{"a.log"}, requests: 27, repeated: []int64{8},
			note: "a.log: 8 of its requests were repeated within it"},
		{name: "the whole log twice in one gzip file", files: map[string][]byte{"a.log.gz": gzipped(t, join(lines, lines))},
			order: []string{"a.log.gz"}, requests: 27, repeated: []int64{27}},
		{name: "repeats within the second of two files", files: map[string][]byte{"a.log": join(lines[:10]), "b.log": join(lines[5:], lines[20:])},
			order: []string{"a.log", "b.log"}, requests: 27, repeated: []int64{0, 7},
			note: "b.log: 5 of its requests were also in DIR/a.log"},
		{name: "another port is another request", files: map[string][]byte{"a.log": join(lines[:5], []string{otherPort})},
			order: []string{"a.log"}, requests: 6, repeated: []int64{0}},
		{name: "whole-second times: never taken for repeats", files: map[string][]byte{"a.log": join(wall(lines[:5]), wall(lines[3:4]))},
			order: []string{"a.log"}, requests: 6, repeated: []int64{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, b := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var paths []string
			for _, name := range tt.order {
				paths = append(paths, filepath.Join(dir, name))
			}
			for _, workers := range []int{1, 3} {
				var got int64
				st, err := Read(context.Background(), paths, Options{Workers: workers}, nil, func(b []sources.Request) error {
					got += int64(len(b))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if got != tt.requests || st.Requests != tt.requests {
					t.Errorf("workers %d: %d requests delivered (%d counted), want %d", workers, got, st.Requests, tt.requests)
				}
				var total int64
				for i, in := range st.Inputs {
					total += in.Repeated + in.Duplicates
					if in.Repeated != tt.repeated[i] {
						t.Errorf("workers %d: %s: %d repeated, want %d", workers, in.Name, in.Repeated, tt.repeated[i])
					}
				}
				if st.Duplicates != total {
					t.Errorf("Stats.Duplicates %d, want the inputs' %d", st.Duplicates, total)
				}
				if tt.note != "" {
					found := false
					for _, n := range st.Notes {
						found = found || strings.Contains(strings.ReplaceAll(n.Message, dir+string(filepath.Separator), ""), strings.ReplaceAll(tt.note, "DIR/", ""))
					}
					if !found {
						t.Errorf("no note says %q: %v", tt.note, st.Notes)
					}
				}
			}
		})
	}
}
