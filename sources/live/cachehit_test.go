package live

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// cacheLine is a Caddy access-log line at ts with the given request and
// response headers (JSON object bodies), status and duration.
func cacheLine(ts time.Time, reqHeaders, respHeaders string, status int, duration float64) string {
	return fmt.Sprintf(`{"level":"info","ts":%s,"logger":"http.log.access.log0","msg":"handled request","request":{"remote_ip":"203.0.113.9","client_ip":"203.0.113.9","proto":"HTTP/1.1","method":"GET","host":"wiki.example.org","uri":"/wiki/Main_Page","headers":{%s}},"bytes_read":0,"user_id":"","duration":%s,"size":1200,"status":%d,"resp_headers":{%s}}`,
		strconv.FormatFloat(float64(ts.UnixMicro())/1e6, 'f', 6, 64), reqHeaders, strconv.FormatFloat(duration, 'f', 6, 64), status, respHeaders)
}

// cacheCases are response headers a cache in front of PHP writes, with the
// traps the reader avoids: a hit in a client's URL inside Souin's bare key=,
// a client sending cache headers of its own, a miss nearer the origin, Age 0,
// names in odd case, and quoted strings holding separators.
var cacheCases = []struct{ name, req, resp string }{
	{"PHP alone", ``, `"X-Powered-By":["PHP/8.3.12"]`},
	{"Souin hit", ``, `"Cache-Status":["Souin; hit; ttl=1234; key=GET-https-wiki.example.org-/wiki/Main_Page"],"X-Powered-By":["PHP/8.3.12"]`},
	{"Souin stored", ``, `"Cache-Status":["Souin; fwd=uri-miss; stored; key=GET-https-wiki.example.org-/wiki/Main_Page"],"X-Powered-By":["PHP/8.3.12"]`},
	{"hit in the URL after key=", ``, `"Cache-Status":["Souin; fwd=uri-miss; key=GET-https-wiki.example.org-/wiki?x=;hit"],"X-Powered-By":["PHP/8.3.12"]`},
	{"hit in the URL after detail=", ``, `"Cache-Status":["Souin; fwd=uri-miss; detail=/x,Cache;hit"],"Via":["1.1 Caddy"]`},
	{"quoted key, then hit", ``, `"Cache-Status":["Souin; key=\"GET-/a;b,c\"; hit"],"X-Powered-By":["PHP/8.3.12"]`},
	{"hit=?1", ``, `"Cache-Status":["ExampleCache; hit=?1"],"Via":["1.1 Caddy"]`},
	{"hit=?0", ``, `"Cache-Status":["ExampleCache; hit=?0"],"Via":["1.1 Caddy"]`},
	{"hit in the second member", ``, `"Cache-Status":["OriginCache; fwd=uri-miss, CDN; HIT; ttl=30"],"X-Powered-By":["PHP/8.3.12"]`},
	{"two values", ``, `"Cache-Status":["Edge; fwd=miss","Shield; hit"],"X-Powered-By":["PHP/8.3.12"]`},
	{"a hit-like cache name", ``, `"Cache-Status":["hit; fwd=miss"],"X-Powered-By":["PHP/8.3.12"]`},
	{"hitme is no hit", ``, `"Cache-Status":["Cache; hitme"],"X-Powered-By":["PHP/8.3.12"]`},
	{"cache-status in odd case", ``, `"cache-status":["Cache; Hit"],"x-powered-by":["PHP/8.3.12"]`},
	{"unterminated quote", ``, `"Cache-Status":["\"Cache; hit"],"X-Powered-By":["PHP/8.3.12"]`},
	{"Varnish hit", ``, `"X-Cache":["HIT from varnish-1"],"Via":["1.1 varnish (Varnish/7.5)"],"Age":["12"]`},
	{"Varnish miss", ``, `"X-Cache":["MISS"],"Via":["1.1 varnish (Varnish/7.5)"],"Age":["0"]`},
	{"CDN shield miss, edge hit", ``, `"X-Cache":["MISS, HIT"],"X-Powered-By":["PHP/8.3.12"]`},
	{"CloudFront", ``, `"X-Cache":["Hit from cloudfront"],"X-Powered-By":["PHP/8.3.12"]`},
	{"Squid", ``, `"X-Cache":["TCP_MEM_HIT"],"X-Powered-By":["PHP/8.3.12"]`},
	{"nginx stale", ``, `"X-Cache":["STALE"],"X-Powered-By":["PHP/8.3.12"]`},
	{"nginx updating", ``, `"X-Cache":["updating"],"X-Powered-By":["PHP/8.3.12"]`},
	{"HIT after the first word", ``, `"X-Cache":["MISS HIT"],"X-Powered-By":["PHP/8.3.12"]`},
	{"stalemate is no STALE", ``, `"X-Cache":["STALEMATE"],"X-Powered-By":["PHP/8.3.12"]`},
	{"Age alone", ``, `"Age":["3600"],"X-Powered-By":["PHP/8.3.12"]`},
	{"Age zero", ``, `"Age":["000"],"X-Powered-By":["PHP/8.3.12"]`},
	{"Age not a number", ``, `"Age":["12s"],"X-Powered-By":["PHP/8.3.12"]`},
	{"a client's own cache headers", `"Cache-Status":["x; hit"],"X-Cache":["HIT"],"Age":["9"],"Via":["1.1 proxy"]`, `"Content-Type":["text/html"]`},
	{"a value naming a header", ``, `"X-Note":["\"Age\":[\"5\"] \"X-Cache\":[\"HIT\"]"],"X-Powered-By":["PHP/8.3.12"]`},
	{"no PHP marks", ``, `"Content-Type":["image/png"]`},
}

// The LogQL marks decide what the access-log reader decides: for every case
// and status, the origin Loki's counts give the line (accesslog.OriginOf of
// the marks hitStage and phpStage set, run by the fake's LogQL engine with
// Go's regexp, as Loki runs them) equals the reader's.
func TestCacheMarksMatchTheReader(t *testing.T) {
	q, err := lokitest.ParseQuery(`{job="caddy"} ` + phpStage + " " + hitStage)
	if err != nil {
		t.Fatal(err)
	}
	var hits int
	for _, c := range cacheCases {
		for _, status := range []int{200, 304, 404, 429, 503} {
			line := cacheLine(day, c.req, c.resp, status, 0.05)
			var got []sources.Request
			if _, err := accesslog.ReadReader(context.Background(), "t", strings.NewReader(line+"\n"), accesslog.Options{}, &sources.Skips{}, func(rs []sources.Request) error {
				got = append(got, rs...)
				return nil
			}); err != nil || len(got) != 1 {
				t.Fatalf("%s: the reader read %d requests: %v", c.name, len(got), err)
			}
			ls, ok := q.Labels(map[string]string{"job": "caddy"}, line)
			if !ok {
				t.Fatalf("%s: the marks dropped the line", c.name)
			}
			hit := sources.CacheUnknown
			if ls[hitLabel] != "" {
				hit = sources.CacheHit
			}
			if (got[0].Cache == sources.CacheHit) != (hit == sources.CacheHit) {
				t.Errorf("%s (%d): reader's cache %v, Loki's mark %q", c.name, status, got[0].Cache, ls[hitLabel])
			}
			if o := accesslog.OriginOf(ls[phpLabel] != "", status, hit); o != got[0].Origin {
				t.Errorf("%s (%d): reader's origin %v, Loki's %v", c.name, status, got[0].Origin, o)
			}
			if hit == sources.CacheHit && status == 200 {
				hits++
			}
		}
	}
	// The cases hold hits and misses both (the test can fail either way).
	if hits < 10 || hits > len(cacheCases)-8 {
		t.Errorf("%d of %d cases are hits", hits, len(cacheCases))
	}
}

// Under pushdown, the minutes not pulled are counted in Loki by status,
// origin and lateness (access/minute-status.csv); on a log whose responses a
// cache served in part, those counts equal what the access-log reader makes
// of the same lines: requests and PHP time per minute, status, origin and
// lateness. Before the counts placed cache hits, every hit that carried
// PHP's replayed X-Powered-By counted as PHP's.
func TestMinuteStatusCountsCacheHitsAsTheReaderDoes(t *testing.T) {
	clearEnv(t)
	lk := lokitest.New(t)
	from, to := day.Add(12*time.Hour), day.Add(13*time.Hour)
	stream := map[string]string{"job": "caddy"}
	statuses := []int{200, 200, 200, 304, 404, 429, 503}
	var lines []string
	n := 0
	for m := from.Add(-time.Hour); m.Before(to); m = m.Add(time.Minute) {
		for k := range 24 {
			n++
			c := cacheCases[n%len(cacheCases)]
			ts := m.Add(time.Duration(k) * 2 * time.Second)
			// Some answers are slower than the clients' timeout (10 s).
			dur := 0.05 + float64(n%7)*0.3
			if n%11 == 0 {
				dur = 12.5
			}
			line := cacheLine(ts, c.req, c.resp, statuses[n%len(statuses)], dur)
			lk.Push(stream, ts, line)
			lines = append(lines, line)
		}
	}
	cfg := &Config{
		Baseline:      D(time.Hour),
		PushdownAfter: D(0),
		Site:          sources.Site{ClientTimeoutS: 10},
		Loki:          &Loki{Addr: lk.URL(), Selector: `{job="caddy"}`, Retries: -1},
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	m, notes, err := Fetch(context.Background(), cfg, from, to, dir, nil)
	if err != nil || len(sources.Problems(notes)) > 0 {
		t.Fatalf("fetch: %v %v", err, notes)
	}
	if len(m.Pushdown.Families) > 0 {
		t.Fatalf("families %v pulled across the range: the counts leave their lines out", m.Pushdown.Families)
	}
	minutes, err := ReadMinuteCounts(filepath.Join(dir, MinuteCountsFile))
	if err != nil {
		t.Fatal(err)
	}
	counted := map[time.Time]bool{}
	for _, mm := range minutes {
		if !mm.Pulled {
			counted[mm.T] = true
		}
	}
	if len(counted) < 60 {
		t.Fatalf("only %d minutes counted", len(counted))
	}
	type key struct {
		minute time.Time
		status int
		origin sources.Origin
		late   bool
	}
	type value struct {
		requests int64
		seconds  float64
	}
	want := map[key]value{}
	hits := 0
	_, err = accesslog.ReadReader(context.Background(), "t", strings.NewReader(strings.Join(lines, "\n")+"\n"), accesslog.Options{}, &sources.Skips{}, func(rs []sources.Request) error {
		for _, r := range rs {
			mt := r.Time.UTC().Truncate(time.Minute)
			if !counted[mt] {
				continue
			}
			k := key{mt, r.Status, r.Origin, r.Duration > 10}
			v := want[k]
			v.requests++
			if r.Origin == sources.OriginUpstream {
				v.seconds += r.Duration
			}
			want[k] = v
			if r.Cache == sources.CacheHit && r.Status < 500 {
				hits++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := bundle.ReadMinuteStatus(filepath.Join(dir, bundle.MinuteStatusFile))
	if err != nil {
		t.Fatal(err)
	}
	got := map[key]value{}
	for _, r := range rows {
		k := key{r.Minute, r.Status, r.Origin, r.Late}
		if _, dup := got[k]; dup {
			t.Errorf("two rows for %+v", k)
		}
		got[k] = value{r.Requests, r.PHPSeconds}
	}
	for k, w := range want {
		g := got[k]
		if g.requests != w.requests || math.Abs(g.seconds-w.seconds) > 1e-5 {
			t.Errorf("%s status %d %s late %t: Loki %d requests %.6f s, the reader %d %.6f s", k.minute.Format("15:04"), k.status, k.origin, k.late, g.requests, g.seconds, w.requests, w.seconds)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s status %d %s late %t: Loki counts %d requests the reader does not have", k.minute.Format("15:04"), k.status, k.origin, k.late, g.requests)
		}
	}
	// The log holds cache hits the counts must place (the test can fail).
	if hits < 100 {
		t.Errorf("only %d cache hits in the counted minutes", hits)
	}
}
