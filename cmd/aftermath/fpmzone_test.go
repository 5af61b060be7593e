package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

// fpmOverloadLine is a php-fpm log line of the kinds the analysis reads (a
// pool at pm.max_children, a slow request), with its zone-less time.
var fpmOverloadLine = regexp.MustCompile(`^\[(\d{2}-[A-Za-z]{3}-\d{4} \d{2}:\d{2}:\d{2})\] .*(reached pm\.max_children setting|executing too slow)`)

// fpmSpanIn is the first and last overload line of the php-fpm log at path
// inside [from, to), its times read in loc; zero when none falls inside.
func fpmSpanIn(t *testing.T, path string, loc *time.Location, from, to time.Time) (first, last time.Time) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := fpmOverloadLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ts, err := time.ParseInLocation("02-Jan-2006 15:04:05", m[1], loc)
		if err != nil {
			t.Fatal(err)
		}
		if ts.Before(from) || !ts.Before(to) {
			continue
		}
		if first.IsZero() {
			first = ts
		}
		last = ts
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return first, last
}

// TestFPMLogZone: php-fpm writes its log's times without a zone. They are
// read as the access log's zone-less times are: UTC (where the simulator's
// php-fpm, like the lab's, writes them) unless --log-tz (or a Caddyfile's
// time_local, TestEvidenceLayouts) says the host writes local time; the
// bundle's timezone, where the report is shown, never moves them. Read in
// the bundle's Asia/Seoul, every slow request of the reference incident
// moved nine hours before the window, and the saturation counted none.
func TestFPMLogZone(t *testing.T) {
	t.Parallel()
	ref := referenceBundle(t)
	tests := []struct {
		name string
		zone string // bundle.yaml's timezone
		host *time.Location
		args []string
		// loadOnly reads the copy as analyze loads it (loadLayout) rather
		// than analyzing it: the php-fpm log's coverage is the loading's,
		// and the run through the CLI is the --log-tz case's.
		loadOnly bool
	}{
		{name: "as simulated: timezone Asia/Seoul", zone: "Asia/Seoul", host: time.UTC},
		{name: "another display zone moves nothing", zone: "America/New_York", host: time.UTC, loadOnly: true},
		// Its run is over the half hour in which the pool saturates
		// (--from, --to) rather than the whole window: the php-fpm log's
		// overload lines inside it are what is compared, and read in UTC
		// they sit nine hours away from it.
		{name: "--log-tz names the host's zone", zone: "Asia/Seoul", host: mustLoad(t, "Asia/Tokyo"),
			args: []string{"--log-tz", "Asia/Tokyo", "--from", "2026-10-02T17:10:00Z", "--to", "2026-10-02T17:40:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var from, to, gotFirst, gotLast time.Time
			switch {
			case tt.loadOnly:
				b := zonedCopy(t, ref, tt.zone, tt.host)
				bd, err := bundle.Open(b)
				if err != nil {
					t.Fatal(err)
				}
				from, to = bd.Manifest.Window.From, bd.Manifest.Window.To
				l := loadLayout(t, b, "")
				i := slices.IndexFunc(l.Coverage, func(c sources.Coverage) bool { return c.Source == "php-fpm log" })
				if i < 0 {
					t.Fatal("no php-fpm log coverage")
				}
				if c := l.Coverage[i]; c.First != nil && c.Last != nil {
					gotFirst, gotLast = *c.First, *c.Last
				}
			default:
				var r map[string]any
				if tt.zone == "Asia/Seoul" && tt.host == time.UTC && len(tt.args) == 0 {
					// The bundle as simulated: its report.json is the
					// reference's, analyzed once for the package.
					r = referenceReport(t)
				} else {
					_, _, r = analyzeJSON(t, append([]string{"--bundle", zonedCopy(t, ref, tt.zone, tt.host)}, tt.args...)...)
				}
				w := r["window"].(map[string]any)
				from, _ = time.Parse(time.RFC3339, w["from"].(string))
				to, _ = time.Parse(time.RFC3339, w["to"].(string))
				var cov map[string]any
				for _, c := range r["coverage"].([]any) {
					if m := c.(map[string]any); m["source"] == "php-fpm log" {
						cov = m
					}
				}
				if cov == nil {
					t.Fatal("no php-fpm log coverage")
				}
				got := func(k string) time.Time {
					s, _ := cov[k].(string)
					v, _ := time.Parse(time.RFC3339Nano, s)
					return v
				}
				gotFirst, gotLast = got("first"), got("last")
			}
			// What the simulator wrote, in UTC.
			first, last := fpmSpanIn(t, filepath.Join(ref, "logs", "php-fpm.log"), time.UTC, from, to)
			if first.IsZero() {
				t.Fatal("the simulated php-fpm log has no overload line inside the window: the test checks nothing")
			}
			if !gotFirst.Equal(first) || !gotLast.Equal(last) {
				t.Errorf("php-fpm log read from %s to %s, want %s to %s", gotFirst, gotLast, first, last)
			}
		})
	}
}

// zonedCopy copies the reference bundle ref into a new directory, its
// bundle.yaml naming timezone zone and its php-fpm log written in host.
func zonedCopy(t *testing.T, ref, zone string, host *time.Location) string {
	t.Helper()
	b := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(b, os.DirFS(ref)); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(b, "bundle.yaml")
	text := string(mustRead(t, manifest))
	if !strings.Contains(text, "timezone: Asia/Seoul\n") {
		t.Fatalf("bundle.yaml names no timezone Asia/Seoul:\n%s", text)
	}
	if err := os.WriteFile(manifest, []byte(strings.Replace(text, "timezone: Asia/Seoul\n", "timezone: "+zone+"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if host != time.UTC {
		hostLocalFPMLog(t, b, host)
	}
	return b
}

// hostLocalFPMLog rewrites bundle b's php-fpm log (simulated in UTC) in
// loc, as php-fpm writes it on a host whose clock is in loc: the host whose
// Caddy writes local time (time_local, --log-tz) writes both logs so.
func hostLocalFPMLog(t *testing.T, b string, loc *time.Location) {
	t.Helper()
	p := filepath.Join(b, "logs", "php-fpm.log")
	stamp := regexp.MustCompile(`^\[(\d{2}-[A-Za-z]{3}-\d{4} \d{2}:\d{2}:\d{2})\]`)
	lines := strings.Split(string(mustRead(t, p)), "\n")
	for i, l := range lines {
		m := stamp.FindStringSubmatchIndex(l)
		if m == nil {
			continue
		}
		ts, err := time.Parse("02-Jan-2006 15:04:05", l[m[2]:m[3]])
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = l[:m[2]] + ts.In(loc).Format("02-Jan-2006 15:04:05") + l[m[3]:]
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}
