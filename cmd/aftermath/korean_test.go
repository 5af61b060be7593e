package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// A Korean postmortem, terminal summary and rules.caddy say every sentence
// in Korean: no line holds three or more English words in a row outside
// identifiers (words with _ . / = : or digits, language tags), product
// names, quoted log values, code spans, code blocks, commands and URLs. The
// lab recording is analysed as a user would (analyze --lang ko: its
// postmortem, what it prints, its error line and rules.caddy); five
// simulated scenarios that take different detectors, notes and advice are
// rendered from their shared analysis: crawler-backlog's config_change
// findings lower the risk or are ruled out by the numbers,
// heavy-scraper-among-bots' pool cut is linked by Little's law.
func TestKoreanReportHasNoEnglishSentence(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, what, text string) {
		t.Helper()
		for _, bad := range englishLines(text) {
			t.Errorf("%s line %d has English %q:\n%s", what, bad.n, bad.run, bad.line)
		}
	}
	t.Run("lab", func(t *testing.T) {
		t.Parallel()
		lab := testenv.LabIncident(t, "")
		out := t.TempDir()
		var printed bytes.Buffer
		var stderr bytes.Buffer
		code := runTo([]string{"analyze", "--bundle", lab, "--out", out, "--format", "md", "--lang", "ko"}, &printed, &stderr)
		if code != exitOK && code != exitIncomplete {
			t.Fatalf("analyze exit %d:\n%s%s", code, printed.String(), stderr.String())
		}
		md, err := os.ReadFile(filepath.Join(out, "postmortem.md"))
		if err != nil {
			t.Fatal(err)
		}
		check(t, "postmortem.md", string(md))
		check(t, "terminal", printed.String()+stderr.String())
		caddy, err := os.ReadFile(filepath.Join(out, "rules.caddy"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(caddy), "\nrate_limit {\n") {
			t.Fatalf("the lab's rules.caddy has no rate_limit block:\n%s", caddy)
		}
		check(t, "rules.caddy", caddyComments(string(caddy)))
	})
	t.Run("no-zone rules.caddy", func(t *testing.T) {
		check(t, "rules.caddy", caddyComments(rules.NoProposalComment(report.LangKO, false)))
		check(t, "rules.caddy", caddyComments(rules.NoProposalComment(report.LangKO, true)))
	})
	for _, sc := range []string{"flash-crowd", "slow-database", "idle-pinning", "crawler-backlog", "heavy-scraper-among-bots"} {
		t.Run(sc, func(t *testing.T) {
			t.Parallel()
			r := analyzedScenario(t, sc)
			out := t.TempDir()
			if _, err := report.WriteAll(out, r, []string{"md"}, report.LangKO); err != nil {
				t.Fatal(err)
			}
			md, err := os.ReadFile(filepath.Join(out, "postmortem.md"))
			if err != nil {
				t.Fatal(err)
			}
			check(t, "postmortem.md", string(md))
			var term bytes.Buffer
			report.PrintSummary(&term, r, report.LangKO)
			check(t, "terminal", term.String())
		})
	}
}

// rules --lang ko writes its rules file's comments in Korean: the header of
// the small crawl's zones, and the comment of a flash crowd, for which no
// zone is proposed.
func TestKoreanRulesFile(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, bundle, want string
	}{
		{"zones", smallCrawlBundle(t), "\nrate_limit {\n"},
		{"no zone", scenarioBundle(t, "flash-crowd"), "함께 출력된 메모 참고"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runRoot(t, "rules", "--bundle", tt.bundle, "--lang", "ko")
			if code != exitOK && code != exitIncomplete {
				t.Fatalf("rules exit %d:\n%s", code, stderr)
			}
			if !strings.Contains(stdout, tt.want) || !strings.HasPrefix(stdout, "# ") {
				t.Fatalf("the rules file lacks %q:\n%s", tt.want, stdout)
			}
			for _, bad := range englishLines(caddyComments(stdout)) {
				t.Errorf("rules file line %d has English %q:\n%s", bad.n, bad.run, bad.line)
			}
		})
	}
}

// A Korean scan (scan --lang ko) says every sentence of scan.md, its terminal
// summary and its exit line in Korean, as the postmortem does: the small
// bundle scanned while its crawler bursts (anomalies, a proposed zone, the
// detectors' findings), on a quiet hour, and past the end of its logs (not
// judged). scan.json keeps the English.
func TestKoreanScanHasNoEnglishSentence(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, what, text string) {
		t.Helper()
		for _, bad := range englishLines(text) {
			t.Errorf("%s line %d has English %q:\n%s", what, bad.n, bad.run, bad.line)
		}
	}
	b := scanBundle(t)
	for _, tt := range []struct {
		name string
		now  time.Time
		code int
	}{
		{"crawler", scanDay.AddDate(0, 0, 3).Add(23 * time.Hour), exitIncomplete},
		{"quiet", scanDay.AddDate(0, 0, 3).Add(12 * time.Hour), exitOK},
		{"no lines", scanDay.AddDate(0, 0, 5), exitUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			var printed, stderr bytes.Buffer
			code := runTo([]string{"scan", "--bundle", b, "--now", tt.now.Format(time.RFC3339), "--out", out, "--lang", "ko", "--quiet"}, &printed, &stderr)
			if code != tt.code {
				t.Fatalf("scan exit %d, want %d:\n%s%s", code, tt.code, printed.String(), stderr.String())
			}
			md, err := os.ReadFile(filepath.Join(out, "scan.md"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(md), "# 스캔 ") {
				t.Fatalf("scan.md is not the Korean one:\n%s", md)
			}
			check(t, "scan.md", string(md))
			check(t, "terminal", printed.String()+stderr.String())
			js, err := os.ReadFile(filepath.Join(out, "scan.json"))
			if err != nil {
				t.Fatal(err)
			}
			if regexp.MustCompile(`[가-힣]`).Match(js) {
				t.Errorf("scan.json holds Korean; it keeps the English")
			}
			if tt.name == "crawler" && !strings.Contains(string(md), "rate\\_limit") {
				t.Errorf("the crawler scan proposes no zone:\n%s", md)
			}
		})
	}
}

// caddyComments is the prose of a Caddyfile: its comment lines without the
// "#", the commands among them (indented by five spaces or more, to be
// typed as written) and everything that is not a comment (the block, which
// is code) left out.
func caddyComments(text string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		c, ok := strings.CutPrefix(line, "#")
		if !ok || strings.HasPrefix(c, "      ") {
			continue
		}
		out = append(out, c)
	}
	return strings.Join(out, "\n")
}

var (
	codeSpan      = regexp.MustCompile("`[^`]*`")
	quoted        = regexp.MustCompile(`"[^"]*"|“[^”]*”`)
	urlText       = regexp.MustCompile(`https?://\S+`)
	commitSubject = regexp.MustCompile(`\b[0-9a-f]{7,40}: [^)│|]*`)
	zoneSettings  = regexp.MustCompile(`events \d+ window \S+ key \S+`)
	// A language tag (Accept-Language's en-us, pt-br) is a value of the log.
	languageTag = regexp.MustCompile(`^[a-z]{2,3}-[a-z]{2,4}$`)
	englishRun  = 3
	// Names of products, protocols and headers read as names in Korean text.
	names = map[string]bool{"caddy": true, "php": true, "chrome": true, "safari": true, "edge": true, "firefox": true,
		"unix": true, "tcp": true, "cpu": true, "fastcgi": true, "promql": true, "dial": true, "backlog": true,
		"goodput": true, "accept": true, "id": true, "aftermath": true, "mediawiki": true, "wordpress": true}
)

// englishLine is a line with a run of English words.
type englishLine struct {
	n         int
	run, line string
}

// englishLines finds the lines of text (a Markdown or terminal rendering)
// with a run of englishRun English words, outside code blocks.
func englishLines(text string) []englishLine {
	var out []englishLine
	inBlock := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			continue
		}
		if run := englishWords(line); run != "" {
			out = append(out, englishLine{i + 1, run, line})
		}
	}
	return out
}

// englishWords returns the first run of englishRun or more English words in
// line, "" when there is none.
func englishWords(line string) string {
	line = strings.ReplaceAll(line, `\`, "") // Markdown escapes
	line = codeSpan.ReplaceAllString(line, " ")
	line = urlText.ReplaceAllString(line, " ")
	line = quoted.ReplaceAllString(line, " ")
	// A commit's subject and a rate limit zone's settings are the config
	// repository's words, quoted as they were written.
	line = commitSubject.ReplaceAllString(line, " ")
	line = zoneSettings.ReplaceAllString(line, " ")
	// A table's cell ends a run: a header and its value are not a sentence.
	line = strings.NewReplacer("|", " | ", "│", " | ").Replace(line)
	var run []string
	for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == ',' || r == ';' || r == '\t' }) {
		w := strings.Trim(f, ".:!?[]()'*")
		if isEnglishWord(w) {
			run = append(run, w)
			if len(run) >= englishRun {
				return strings.Join(run, " ")
			}
			continue
		}
		run = run[:0]
	}
	return ""
}

// isEnglishWord: Latin letters only (a hyphen inside allowed), not a name.
func isEnglishWord(w string) bool {
	if w == "" || names[strings.ToLower(w)] || languageTag.MatchString(w) {
		return false
	}
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '\'') {
			return false
		}
	}
	// A single letter is a variable of the arithmetic (B x S / W).
	return len(strings.Trim(w, "-'")) > 1
}
