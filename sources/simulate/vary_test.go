package simulate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

// Every ts encoding varyBySeed draws is one the project's reader takes back
// to the same instant, whatever the host's offset (string forms carry it).
func TestLogTimeReadsBack(t *testing.T) {
	ns := time.Date(2026, 11, 26, 2, 1, 7, 123456789, time.UTC).UnixNano()
	for f := LogTimeUnixSeconds; f <= LogTimeRFC3339Nano; f++ {
		for _, off := range hostOffsets {
			ts := string(appendLogTS(nil, ns, f, off))
			line := `{"level":"info","ts":` + ts + `,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"1.2.3.4","remote_port":"5","client_ip":"1.2.3.4","proto":"HTTP/1.1","method":"GET","host":"h","uri":"/","headers":{}},"duration":0.1,"size":1,"status":200,"resp_headers":{}}` + "\n"
			var got []time.Time
			var skips sources.Skips
			if _, err := accesslog.ReadReader(context.Background(), "x", strings.NewReader(line), accesslog.Options{}, &skips,
				func(rs []sources.Request) error {
					for _, r := range rs {
						got = append(got, r.Time)
					}
					return nil
				}); err != nil || len(got) != 1 {
				t.Fatalf("%s at %+d: %v, %d requests (%v)", f, off, err, len(got), skips.Notes("access", "lines"))
			}
			tol := time.Microsecond
			if f == LogTimeISO8601 {
				tol = time.Millisecond // zap's ISO 8601 keeps milliseconds
			}
			if d := got[0].Sub(time.Unix(0, ns)).Abs(); d >= tol {
				t.Errorf("%s at %+d (%s): read back %v, %v off", f, off, ts, got[0], d)
			}
		}
	}
}

// A varied seed writes a log the reader takes whole, in order, with the
// cache's verdicts readable from the mark drawn and readers on IPv6; seed
// 1 varies nothing.
func TestVariedHabitsReadBack(t *testing.T) {
	t.Parallel()
	if sc, _ := Lookup("cache-stampede"); len(sc.varyBySeed(1)) != 0 || sc.LogTime != 0 || sc.ReaderIPv6Share != 0 || sc.BrowserHeaders {
		t.Fatalf("seed 1 varied: %+v", sc)
	}
	// The first seed whose draw has a string ts, a mark other than
	// Cache-Status, whole browser header sets and IPv6 readers.
	var seed int64
	for s := int64(2); s < 500 && seed == 0; s++ {
		sc, _ := Lookup("cache-stampede")
		sc.varyBySeed(s)
		if sc.LogTime >= LogTimeISO8601 && sc.CacheMark != CacheMarkStatus && sc.BrowserHeaders && sc.ReaderIPv6Share > 0.2 {
			seed = s
		}
	}
	if seed == 0 {
		t.Fatal("no seed below 500 varies the dialect this far")
	}
	sum := run(t, Options{Scenario: "cache-stampede", Seed: seed, BaselineHours: 0.05, StoredGzip: true})
	b, err := bundle.Open(sum.Out)
	if err != nil {
		t.Fatal(err)
	}
	var skips sources.Skips
	var reqs, hits, misses, v6 int64
	var last time.Time
	st, err := accesslog.Read(context.Background(), b.Access, accesslog.Options{}, &skips, func(rs []sources.Request) error {
		for _, r := range rs {
			reqs++
			switch r.Cache {
			case sources.CacheHit:
				hits++
			case sources.CacheMiss:
				misses++
			}
			if r.ClientIP.Is6() {
				v6++
			}
			last = r.Time
		}
		return nil
	})
	if err != nil || skips.Count("") != 0 || reqs != sum.Lines || st.OutOfOrder != 0 {
		t.Fatalf("seed %d (%v): %v, %d skipped, %d of %d lines, %d out of order", seed, sum.Truth.Varied, err, skips.Count(""), reqs, sum.Lines, st.OutOfOrder)
	}
	if hits < reqs/10 || misses < reqs/50 || v6 < reqs/10 {
		t.Errorf("seed %d (%v): of %d requests %d cache hits, %d misses, %d from IPv6", seed, sum.Truth.Varied, reqs, hits, misses, v6)
	}
	if end, _ := time.Parse(time.RFC3339, sum.Truth.Window.To); last.Before(end.Add(-time.Minute)) || last.After(end.Add(time.Minute)) {
		t.Errorf("seed %d: last line at %v, window ends %v: ts read in the wrong zone", seed, last, end)
	}
}
