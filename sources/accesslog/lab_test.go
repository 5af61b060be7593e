package accesslog

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// labOrderDigest is sha256 over "<ts in µs> <uri>\n" for every line in file
// order, with ts converted from its decimal text and rounded half up (Python:
// Decimal.quantize(ROUND_HALF_UP)).
const labOrderDigest = "4d91a17b1b22e23ab492fb4d02ce1b38d370960c82866664ae6eb9852d7b55eb"

// The expected numbers below were counted independently of this package, with
// Python's json module over the same file.
func TestReadLabIncident(t *testing.T) {
	// The real Caddy 2.11.9 recording (shared/data/README.md).
	labLog := testenv.LabIncident(t, "access/access.log.gz")
	for _, workers := range []int{1, 2, 7} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			var skips sources.Skips
			status := map[int]int{}
			origin := map[sources.Origin]int{}
			lang := map[string]int{}
			loggedIn := map[sources.LoggedIn]int{}
			method := map[string]int{}
			ips := map[string]bool{}
			withQuery := 0
			var durUS, size int64
			order := sha256.New()
			st, err := Read(context.Background(), []string{labLog},
				Options{LoggedInCookie: "wikiUserID=", Workers: workers}, &skips,
				func(batch []sources.Request) error {
					for _, r := range batch {
						status[r.Status]++
						origin[r.Origin]++
						lang[r.Lang]++
						loggedIn[r.LoggedIn]++
						method[r.Method]++
						ips[r.ClientIP.String()] = true
						if r.Query != "" {
							withQuery++
						}
						durUS += int64(r.Duration*1e6 + 0.5)
						size += r.Size
						uri := r.Path
						if r.Query != "" {
							uri += "?" + r.Query
						}
						fmt.Fprintf(order, "%d %s\n", r.Time.UnixMicro(), uri)
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			if n := skips.Count(""); n != 0 {
				t.Errorf("skipped %d lines: %v", n, skips.Notes("access", "lines"))
			}
			want := Stats{Files: 1, Lines: 16955, Requests: 16955, Bytes: 18318737, OutOfOrder: 2,
				First: time.UnixMicro(1795966435061845), Last: time.UnixMicro(1795967170321259)}
			if !st.First.Equal(want.First) || !st.Last.Equal(want.Last) {
				t.Errorf("First, Last = %v, %v; want %v, %v", st.First, st.Last, want.First, want.Last)
			}
			st.First, st.Last, want.First, want.Last = time.Time{}, time.Time{}, time.Time{}, time.Time{}
			if plainStats(st) != plainStats(want) {
				t.Errorf("stats = %+v\nwant    %+v", st, want)
			}
			checkCounts(t, "status", status, map[int]int{200: 11540, 404: 23, 503: 3027, 504: 2365})
			checkCounts(t, "origin", origin, map[sources.Origin]int{
				sources.OriginProxy: 5392, sources.OriginUpstream: 5270, sources.OriginStatic: 6293})
			checkCounts(t, "lang", lang, map[string]int{
				"zh-cn": 9158, "ko-kr": 5568, "en-us": 1718, "": 270, "ja-jp": 208, "zh-tw": 33})
			checkCounts(t, "logged in", loggedIn, map[sources.LoggedIn]int{
				sources.LoggedInNo: 16369, sources.LoggedInYes: 586})
			checkCounts(t, "method", method, map[string]int{"GET": 16927, "POST": 28})
			if len(ips) != 6613 {
				t.Errorf("distinct client IPs = %d, want 6613", len(ips))
			}
			if withQuery != 6633 {
				t.Errorf("requests with a query = %d, want 6633", withQuery)
			}
			if durUS != 42222937031 || size != 71312261 {
				t.Errorf("sum of durations = %d µs, sizes = %d; want 42222937031, 71312261", durUS, size)
			}
			// A digest of (ts, uri) in delivery order proves batches arrive in file order.
			if got := hex.EncodeToString(order.Sum(nil)); got != labOrderDigest {
				t.Errorf("order digest = %s, want %s", got, labOrderDigest)
			}
		})
	}
}

func checkCounts[K comparable](t *testing.T, what string, got, want map[K]int) {
	t.Helper()
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s %v: got %d, want %d", what, k, got[k], n)
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s %v: got %d, want none", what, k, n)
		}
	}
}

// TestLabIncidentReencoded reads the whole recording as Caddy would have
// written it with duration_format ms inside Docker's json-file wrapping: the
// same requests come out, with durations truncated to the millisecond, and the
// unit is detected rather than taken for seconds (which would make every
// request a thousand times slower).
func TestLabIncidentReencoded(t *testing.T) {
	labLog := testenv.LabIncident(t, "access/access.log.gz")
	zr, err := gzip.NewReader(bytes.NewReader(readFile(t, labLog)))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	ms := withDur(func(d time.Duration) string { return strconv.FormatInt(d.Nanoseconds()/1e6, 10) })
	var wrapped bytes.Buffer
	var wantMS int64
	for _, line := range strings.Split(strings.TrimSuffix(string(plain), "\n"), "\n") {
		wantMS += sampleDur(line).Nanoseconds() / 1e6
		wrapped.WriteString(docker(ms(line)) + "\n")
	}
	var gotMS float64
	status := map[int]int{}
	st, err := ReadReader(context.Background(), "docker.json", &wrapped, Options{}, nil, func(b []sources.Request) error {
		for _, r := range b {
			gotMS += r.Duration * 1e3
			status[r.Status]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests != 16955 || math.Abs(gotMS-float64(wantMS)) > 1 {
		t.Errorf("%d requests, durations sum to %.0f ms; want 16955, %d ms", st.Requests, gotMS, wantMS)
	}
	checkCounts(t, "status", status, map[int]int{200: 11540, 404: 23, 503: 3027, 504: 2365})
	checkNotes(t, st.Notes, []string{"16955 Docker json-file lines: unwrapped", "read as milliseconds, Caddy's duration_format ms"})
}
