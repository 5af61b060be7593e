package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/analysis"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// analyzePlacement runs analyze on bundle into a new directory and returns
// it with the report.
func analyzePlacement(t *testing.T, bundleDir string) (string, *report.Report) {
	t.Helper()
	out := t.TempDir()
	var printed bytes.Buffer
	if code := runTo([]string{"analyze", "--bundle", bundleDir, "--out", out, "--format", "json,md", "--quiet"}, &printed, &printed); code != exitOK && code != exitIncomplete {
		t.Fatalf("analyze exit %d:\n%s", code, printed.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Rules) == 0 {
		t.Fatalf("no rule proposed: nothing to place")
	}
	if r.RulesPlacement == nil {
		t.Fatal("report.json has no rules_placement beside its rules")
	}
	return out, &r
}

// siteBlockOf returns the lines of the top-level block that opens on the
// line "open" of a Caddyfile.
func siteBlockOf(t *testing.T, caddyfile, open string) string {
	t.Helper()
	lines := strings.Split(caddyfile, "\n")
	for i, l := range lines {
		if l != open {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			if lines[j] == "}" {
				return strings.Join(lines[i:j+1], "\n")
			}
		}
	}
	t.Fatalf("no block opening with %q in:\n%s", open, caddyfile)
	return ""
}

// checkPlaced checks the files analyze wrote beside rules.caddy: the placed
// Caddyfile is accepted by Caddy's own adapter with the proposed zones, the
// zones are in the site block "want" and in no other, and the diff only adds.
func checkPlaced(t *testing.T, out string, r *report.Report, want string, others ...string) {
	t.Helper()
	rp := r.RulesPlacement
	if rp.NotPlaced != "" || rp.Site != want {
		t.Fatalf("rules_placement = %+v, want the zones in %q", *rp, want)
	}
	placed, err := os.ReadFile(filepath.Join(out, analysis.PlacedCaddyfile))
	if err != nil {
		t.Fatal(err)
	}
	var zones []string
	for _, rl := range r.Rules {
		zones = append(zones, rl.Name)
	}
	if _, err := rules.CheckCaddyfile(placed, analysis.PlacedCaddyfile, zones); err != nil {
		t.Fatalf("Caddy's adapter refuses the placed Caddyfile: %v", err)
	}
	if lines := strings.Split(string(placed), "\n"); rp.Line < 1 || rp.Line > len(lines) || !strings.Contains(siteBlockOf(t, string(placed), want+" {"), "rate_limit {") {
		t.Errorf("the block %q (line %d) holds no rate_limit:\n%s", want, rp.Line, placed)
	}
	for _, o := range others {
		if strings.Contains(siteBlockOf(t, string(placed), o+" {"), "rate_limit") {
			t.Errorf("the zones went into %q too", o)
		}
	}
	diff, err := os.ReadFile(filepath.Join(out, analysis.PlacedDiff))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(diff), "\n") {
		if strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "--- ") {
			t.Errorf("the diff removes a line of the operator's Caddyfile: %q", l)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "postmortem.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "Where the zones go: the site block "+report.MarkdownCell(want)) {
		t.Errorf("the postmortem does not say where the zones go (%q)", want)
	}
}

// The lab's Caddyfile has the site (http://:8080, bound to 127.0.0.1 like
// everything in the lab, its php_fastcgi inside a route) and php-fpm's
// loopback status page (http://:9180, a reverse_proxy, log_skip): the zones
// go into the site, not the status page, though both are loopback-bound.
func TestAnalyzePlacesZonesInLabCaddyfile(t *testing.T) {
	t.Parallel()
	lab := testenv.LabIncident(t, "")
	out, r := analyzePlacement(t, lab)
	checkPlaced(t, out, r, "http://:8080", "http://:9180")
	if r.RulesPlacement.Caddyfile != "config/Caddyfile" {
		t.Errorf("rules_placement.caddyfile = %q, want the repository's config/Caddyfile (no temporary path)", r.RulesPlacement.Caddyfile)
	}
}

// bundleWithCaddyfile copies the small crawl's bundle (smallCrawlBundle:
// where the zones go needs a zone and the logged Host headers, not the
// reference's detail) with its changes/ replaced by one git repository
// holding caddyfile ("" for none).
func bundleWithCaddyfile(t *testing.T, caddyfile string) string {
	t.Helper()
	src, dst := smallCrawlBundle(t), t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if rel == "changes" {
			return fs.SkipDir
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dst, "changes", "config")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	file, content := "README", "configuration\n"
	if caddyfile != "" {
		file, content = "Caddyfile", caddyfile
	}
	if err := os.WriteFile(filepath.Join(repo, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=ops", "-c", "user.email=ops@example.org", "commit", "-q", "-m", "config", "--date", "2020-01-01T00:00:00Z"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_COMMITTER_DATE=2020-01-01T00:00:00Z")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
	}
	return dst
}

// The first site block with a log and php_fastcgi is a loopback-only status
// listener that answers any Host; another public one writes no access log;
// the site that served the logged requests takes its log from a snippet and
// its php_fastcgi from inside a route. The zones go there.
const severalSites = `{
	admin off
}

(common) {
	encode gzip
	log {
		output file /var/log/caddy/access.log
		format json
	}
}

http://:9180 {
	bind 127.0.0.1
	log
	php_fastcgi 127.0.0.1:9001
}

http://:8081 {
	reverse_proxy 127.0.0.1:9000
}

static.example.org {
	import common
	file_server
}

wiki.example.org {
	import common
	route {
		php_fastcgi 127.0.0.1:9000
	}
}
`

func TestAnalyzePlacesZonesInTheServingSite(t *testing.T) {
	t.Parallel()
	t.Run("loopback and log-less sites passed over", func(t *testing.T) {
		t.Parallel()
		out, r := analyzePlacement(t, bundleWithCaddyfile(t, severalSites))
		checkPlaced(t, out, r, "wiki.example.org", "http://:9180", "http://:8081", "static.example.org")
	})
	t.Run("two public candidates: not placed, both named", func(t *testing.T) {
		t.Parallel()
		two := severalSites + "\n*.example.org {\n\timport common\n\tphp_fastcgi 127.0.0.1:9000\n}\n"
		out, r := analyzePlacement(t, bundleWithCaddyfile(t, two))
		np := r.RulesPlacement.NotPlaced
		if !strings.Contains(np, "wiki.example.org") || !strings.Contains(np, "*.example.org") || !strings.Contains(np, "--site") {
			t.Errorf("not_placed = %q, want both candidates named and --site suggested", np)
		}
		if _, err := os.Stat(filepath.Join(out, analysis.PlacedCaddyfile)); !os.IsNotExist(err) {
			t.Errorf("%s written though nothing was placed (%v)", analysis.PlacedCaddyfile, err)
		}
	})
	t.Run("no Caddyfile: said, not guessed", func(t *testing.T) {
		t.Parallel()
		out, r := analyzePlacement(t, bundleWithCaddyfile(t, ""))
		if rp := r.RulesPlacement; rp.Site != "" || !strings.Contains(rp.NotPlaced, "no Caddyfile") {
			t.Errorf("rules_placement = %+v, want no site and a note that there is no Caddyfile", *rp)
		}
		if _, err := os.Stat(filepath.Join(out, analysis.PlacedCaddyfile)); !os.IsNotExist(err) {
			t.Errorf("%s written without a Caddyfile (%v)", analysis.PlacedCaddyfile, err)
		}
	})
}
