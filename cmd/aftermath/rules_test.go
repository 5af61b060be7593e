package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

// runRoot runs the whole CLI with its output captured.
func runRoot(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errw bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errw)
	err := root.ExecuteContext(context.Background())
	return exitCode(err), out.String(), errw.String()
}

// rulesRun is one run of the CLI: its exit status and what it printed.
type rulesRun struct {
	code           int
	stdout, stderr string
}

var smallCrawlRulesRun once[rulesRun]

// smallCrawlRules is `aftermath rules --bundle` on smallCrawlBundle, run
// once for the tests that read it.
func smallCrawlRules(t *testing.T) rulesRun {
	t.Helper()
	b := smallCrawlBundle(t)
	return smallCrawlRulesRun.get(t, func() (rulesRun, error) {
		var out, errw bytes.Buffer
		root := newRootCmd()
		root.SetArgs([]string{"rules", "--bundle", b})
		root.SetOut(&out)
		root.SetErr(&errw)
		err := root.ExecuteContext(context.Background())
		return rulesRun{exitCode(err), out.String(), errw.String()}, nil
	})
}

// followHeader builds a Caddyfile the way rules.caddy's header tells an
// operator to, and nothing more: the global option lines it shows between
// "{" and "}", and the block (the lines that are not comments) pasted at the
// top level of the site block. The site rewrites /w/* at its top level and
// runs PHP behind it, as a MediaWiki site does.
func followHeader(t *testing.T, file string, withGlobal bool) string {
	t.Helper()
	var global, block []string
	inGlobal := false
	for _, l := range strings.Split(strings.TrimSuffix(file, "\n"), "\n") {
		if !strings.HasPrefix(l, "#") {
			block = append(block, "\t"+l)
			continue
		}
		text := strings.TrimSpace(strings.TrimPrefix(l, "#"))
		switch {
		case text == "{":
			inGlobal = true
		case text == "}":
			inGlobal = false
		case inGlobal:
			global = append(global, "\t"+text)
		}
	}
	if len(global) == 0 {
		t.Fatalf("the header shows no global option:\n%s", file)
	}
	var b strings.Builder
	if withGlobal {
		b.WriteString("{\n" + strings.Join(global, "\n") + "\n}\n\n")
	}
	b.WriteString("http://:8080 {\n\trewrite /w/* /index.php?title={path}\n")
	b.WriteString(strings.Join(block, "\n") + "\n")
	b.WriteString("\tphp_fastcgi unix//run/php/php8.2-fpm.sock\n}\n")
	return b.String()
}

// TestDemoRulesFileDeploysByItsHeader is the acceptance test of a deployable
// rules.caddy: the demo's, pasted into a minimal Caddyfile by following only
// its own header, adapts in Caddy with caddy-ratelimit v0.1.0, holding the
// report's zones ahead of the site's rewrite. Without the header's global
// option the same paste puts the zones after the rewrite, which the check
// refuses: the step is needed, not decoration.
func TestDemoRulesFileDeploysByItsHeader(t *testing.T) {
	t.Parallel()
	out := demoOut(t)
	file, err := os.ReadFile(filepath.Join(out, "rules.caddy"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Rules []struct {
			Name     string         `json:"name"`
			Backtest rules.Backtest `json:"backtest"`
		} `json:"rules"`
	}
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rules) == 0 {
		t.Fatalf("the demo proposed no rule, so this test proves nothing:\n%s", file)
	}
	var zones []string
	for _, r := range rep.Rules {
		zones = append(zones, r.Name)
		// The header states the report's backtest, from the same numbers.
		bt := r.Backtest
		want := "crawler: " + fmtCount(bt.CrawlerRefused) + " of " + fmtCount(bt.CrawlerRequests) + " requests refused"
		if !strings.Contains(string(file), "zone "+r.Name+" (") || !strings.Contains(string(file), want) {
			t.Errorf("the header does not state zone %s's backtest (%q):\n%s", r.Name, want, file)
		}
	}
	for _, want := range []string{"xcaddy build --with github.com/mholt/caddy-ratelimit@v0.1.0", "caddy validate --config Caddyfile", "caddy adapt --config Caddyfile", "inside the site block"} {
		if !strings.Contains(string(file), want) {
			t.Errorf("the header lacks %q", want)
		}
	}
	caddyfile := followHeader(t, string(file), true)
	check, err := rules.CheckCaddyfile([]byte(caddyfile), "Caddyfile", zones)
	if err != nil {
		t.Fatalf("%v\n%s", err, caddyfile)
	}
	if check.Handlers[0] != "rate_limit" {
		t.Errorf("handlers in order: %v, want rate_limit first", check.Handlers)
	}
	if _, err := rules.CheckCaddyfile([]byte(followHeader(t, string(file), false)), "Caddyfile", zones); err == nil || !strings.Contains(err.Error(), "rewrite runs before rate_limit") {
		t.Errorf("without the global option the zones run after the rewrite, but the check said %v", err)
	}
	// The postmortem's own rule blocks carry the same steps (one source):
	// each, followed by itself alone, deploys too.
	md, err := os.ReadFile(filepath.Join(out, "postmortem.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```caddyfile\n(.*?)```").FindAllStringSubmatch(string(md), -1)
	if len(blocks) != len(zones) {
		t.Fatalf("postmortem.md has %d rule blocks for %d zones", len(blocks), len(zones))
	}
	for i, b := range blocks {
		if !strings.Contains(b[1], rules.BuildCommand) {
			t.Errorf("postmortem.md's block for zone %s does not say how to build Caddy with the module:\n%s", zones[i], b[1])
		}
		if _, err := rules.CheckCaddyfile([]byte(followHeader(t, b[1], true)), "Caddyfile", zones[i:i+1]); err != nil {
			t.Errorf("postmortem.md's block for zone %s, followed alone: %v", zones[i], err)
		}
	}
}

func fmtCount(n int) string { return detect.FormatInt(int64(n)) }

// TestRulesOutput: piped, stdout is the rules file alone (so "> rules.caddy"
// works) and the tables go to stderr with their headers as written; --out
// writes the same file; --caddyfile prints the diff of a checked copy.
func TestRulesOutput(t *testing.T) {
	t.Parallel()
	b := smallCrawlBundle(t)
	run := smallCrawlRules(t)
	code, stdout, stderr := run.code, run.stdout, run.stderr
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "# Rate limits proposed by aftermath") || !strings.Contains(stdout, "\nrate_limit {\n") || !strings.HasSuffix(stdout, "}\n") {
		t.Fatalf("stdout is not a rules file:\n%s", stdout)
	}
	for _, l := range strings.Split(stdout, "\n") {
		if strings.ContainsAny(l, "│┌└─") || strings.HasPrefix(l, "info (") || strings.HasPrefix(l, "warning (") {
			t.Errorf("stdout carries a table or a note: %q", l)
		}
	}
	if err := rules.Validate(stdout); err != nil {
		t.Errorf("stdout does not adapt as a rate_limit block: %v", err)
	}
	for _, want := range []string{"other logged-out refused", "crawler PHP s saved", "readers sharing the fingerprint refused"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks the header %q as written:\n%s", want, stderr)
		}
	}

	// The runs below are independent: parallel subtests, each with its own files.
	t.Run("--out", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "rules.caddy")
		code, out2, _ := runRoot(t, "rules", "--bundle", b, "--out", file)
		got, err := os.ReadFile(file)
		if code != exitOK || err != nil || string(got) != stdout || out2 != "" {
			t.Errorf("--out: exit %d, %v, file equal to stdout: %v, stdout %q", code, err, string(got) == stdout, out2)
		}
	})

	t.Run("--caddyfile", func(t *testing.T) {
		t.Parallel()
		user := filepath.Join(t.TempDir(), "Caddyfile")
		// The logged requests' Host is wiki.example.org: the shop (PHP too) and
		// php-fpm's loopback status page (a proxy at its top level) did not serve them.
		site := "wiki.example.org {\n\trewrite /wiki/* /index.php?title={path}\n\tphp_fastcgi unix//run/php/php8.2-fpm.sock\n}\n" +
			"shop.example.org {\n\tlog\n\tphp_fastcgi unix//run/php/shop.sock\n}\n" +
			"http://127.0.0.1:9180 {\n\treverse_proxy 127.0.0.1:9001\n}\n"
		if err := os.WriteFile(user, []byte(site), 0o644); err != nil {
			t.Fatal(err)
		}
		code, diff, stderr := runRoot(t, "rules", "--bundle", b, "--caddyfile", user)
		if code != exitOK {
			t.Fatalf("--caddyfile: exit %d:\n%s", code, stderr)
		}
		if !strings.HasPrefix(diff, "--- "+user+"\n+++ "+user+".rate_limit\n") || !strings.Contains(diff, "+\t"+rules.OrderOption) || !strings.Contains(diff, "+\trate_limit {") {
			t.Errorf("--caddyfile does not print the diff:\n%s", diff)
		}
		if orig, _ := os.ReadFile(user); string(orig) != site {
			t.Errorf("--caddyfile changed the original")
		}
		placed, err := os.ReadFile(user + ".rate_limit")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(placed), site[len("wiki.example.org {\n"):]) || !strings.Contains(stderr, "Caddy's adapter accepts it") {
			t.Errorf("the copy:\n%s\nstderr:\n%s", placed, stderr)
		}
		if !strings.Contains(stderr, "in the site block wiki.example.org (chosen because it serves the logged Host headers") ||
			strings.Index(string(placed), "rate_limit {") > strings.Index(string(placed), "shop.example.org {") {
			t.Errorf("the zones are not in wiki.example.org, or stderr does not say why:\n%s\n%s", placed, stderr)
		}
	})

	t.Run("two candidates", func(t *testing.T) {
		t.Parallel()
		user := filepath.Join(t.TempDir(), "Caddyfile")
		// Two sites that both log and run PHP for any Host: refused, both named.
		both := "http://:80 {\n\tlog\n\tphp_fastcgi unix//run/php/a.sock\n}\nhttp://:8080 {\n\tlog\n\troute {\n\t\tphp_fastcgi unix//run/php/b.sock\n\t}\n}\n"
		if err := os.WriteFile(user, []byte(both), 0o644); err != nil {
			t.Fatal(err)
		}
		root := newRootCmd()
		root.SetArgs([]string{"rules", "--bundle", b, "--caddyfile", user})
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		err := root.ExecuteContext(context.Background())
		if code := exitCode(err); code != exitUsage || !strings.Contains(err.Error(), "http://:80 (") || !strings.Contains(err.Error(), "http://:8080 (") || !strings.Contains(err.Error(), "--site") {
			t.Errorf("two candidates: exit %d, want %d naming both and --site: %v", code, exitUsage, err)
		}
	})
}

// TestRulesExitCodeIgnoresMetrics: the rules need access logs, not metrics.
// analyze on the same access log without metrics exits 1 (its evidence is
// incomplete); rules must not.
func TestRulesExitCodeIgnoresMetrics(t *testing.T) {
	t.Parallel()
	b := smallCrawlBundle(t)
	bd, err := bundle.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	from, to := bd.Manifest.Window.From.Format(time.RFC3339), bd.Manifest.Window.To.Format(time.RFC3339)
	args := []string{"--from", from, "--to", to}
	for _, a := range bd.Access {
		args = append(args, "--access", a)
	}
	code, _, stderr := runRoot(t, append([]string{"analyze", "--out", t.TempDir()}, args...)...)
	if code != exitIncomplete {
		t.Fatalf("analyze without metrics: exit %d, want %d, so this test proves nothing:\n%s", code, exitIncomplete, stderr)
	}
	code, stdout, stderr := runRoot(t, append([]string{"rules"}, args...)...)
	if code != exitOK {
		t.Errorf("rules --access without metrics: exit %d, want %d:\n%s", code, exitOK, stderr)
	}
	if !strings.Contains(stdout, "rate_limit {") || !strings.Contains(stderr, "no metrics given") {
		t.Errorf("rules should still print its block and the note on metrics:\n%s\n%s", stdout, stderr)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, _ := runRoot(t, args...)
		if code != exitOK || out != "aftermath "+versionString()+"\n" || !strings.Contains(out, "commit") || strings.Contains(out, "dev\n") {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
}

func TestEnumCompletion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"analyze", "--lang", ""}, []string{"en", "ko"}},
		{[]string{"demo", "--lang", "k"}, []string{"ko"}},
		{[]string{"analyze", "--format", "md,"}, []string{"md,html", "md,json"}},
		{[]string{"simulate", "--scenario", "flash"}, []string{"flash-crowd"}},
		{[]string{"rules", "--tz", "UT"}, []string{"UTC"}},
	} {
		_, out, _ := runRoot(t, append([]string{"__complete"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) == 0 || !strings.HasPrefix(lines[len(lines)-1], ":") {
			t.Errorf("%v: no directive in %q", tc.args, out)
			continue
		}
		if got := strings.Join(lines[:len(lines)-1], " "); got != strings.Join(tc.want, " ") {
			t.Errorf("%v: completes %q, want %q", tc.args, got, tc.want)
		}
	}
}
