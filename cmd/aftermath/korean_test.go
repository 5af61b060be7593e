package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// A Korean postmortem and terminal summary say every sentence in Korean:
// no line holds three or more English words in a row outside identifiers
// (words with _ . / = : or digits), product names, quoted log values, code
// spans, code blocks and URLs. The lab recording is analysed as a user
// would (analyze --lang ko); four simulated scenarios that take different
// detectors, notes and advice are rendered from their shared analysis.
//
// Sentences still said in English by code not yet moved to a catalog are
// listed in notYetKorean, each with where it comes from; a listed sentence
// that no longer shows up fails the test too, so the list only shrinks.
func TestKoreanReportHasNoEnglishSentence(t *testing.T) {
	seen := map[string]bool{}
	check := func(t *testing.T, what, text string) {
		t.Helper()
		for _, bad := range englishLines(text) {
			if markers := pendingMarkers(bad.line); len(markers) > 0 {
				for _, m := range markers {
					seen[m] = true
				}
				continue
			}
			t.Errorf("%s line %d has English %q:\n%s", what, bad.n, bad.run, bad.line)
		}
	}
	labRan := t.Run("lab", func(t *testing.T) {
		lab := testenv.LabIncident(t, "")
		out := t.TempDir()
		var printed bytes.Buffer
		var stderr bytes.Buffer
		if code := runTo([]string{"analyze", "--bundle", lab, "--out", out, "--format", "md", "--lang", "ko"}, &printed, &stderr); code != exitOK && code != exitIncomplete {
			t.Fatalf("analyze exit %d:\n%s%s", code, printed.String(), stderr.String())
		}
		md, err := os.ReadFile(filepath.Join(out, "postmortem.md"))
		if err != nil {
			t.Fatal(err)
		}
		check(t, "postmortem.md", string(md))
		check(t, "terminal", printed.String())
	})
	for _, sc := range []string{"flash-crowd", "slow-database", "idle-pinning", "crawler-backlog"} {
		t.Run(sc, func(t *testing.T) {
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
	if !labRan || t.Failed() {
		return
	}
	for marker, source := range notYetKorean {
		if !seen[marker] {
			t.Errorf("%q (%s) is no longer said in English: remove it from notYetKorean", marker, source)
		}
	}
}

// notYetKorean maps a phrase of each sentence still said in English to the
// code that says it: the next ones to move to a catalog.
var notYetKorean = map[string]string{
	"no change explains":      "config_change reason, detect/configchange.go",
	"the day before) is not":  "config_change summary, detect/changetext.go",
	"days before) lowers":     "config_change summary, detect/changetext.go",
	"(none) -&gt;":            "config_change summary, detect/changetext.go",
	"the day before). ":       "config_change summary (linked), detect/changefindings.go",
	") lowers the risk: With": "config_change summary (mitigation), detect/changefindings.go and changearithmetic.go",
}

// pendingMarkers finds every notYetKorean phrase line holds: all of them,
// not the first in the map's random order, so that which markers are seen
// does not change from run to run when a line holds two.
func pendingMarkers(line string) []string {
	plain := strings.ReplaceAll(line, `\`, "")
	var found []string
	for marker := range notYetKorean {
		if strings.Contains(plain, marker) {
			found = append(found, marker)
		}
	}
	return found
}

var (
	codeSpan      = regexp.MustCompile("`[^`]*`")
	quoted        = regexp.MustCompile(`"[^"]*"|“[^”]*”`)
	urlText       = regexp.MustCompile(`https?://\S+`)
	commitSubject = regexp.MustCompile(`\b[0-9a-f]{7,40}: [^)│|]*`)
	zoneSettings  = regexp.MustCompile(`events \d+ window \S+ key \S+`)
	englishRun    = 3
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
	if w == "" || names[strings.ToLower(w)] {
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
