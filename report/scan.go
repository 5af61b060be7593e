package report

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/scan"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/rules/rule"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/templates"
)

// ScanSchema identifies the scan.json format; outside tests read it.
const ScanSchema = "aftermath.scan/v1"

// Files a scan writes into its output directory.
const (
	ScanJSONFile     = "scan.json"
	ScanMarkdownFile = "scan.md"
)

// ScanSchemaJSON is the JSON Schema (draft 2020-12) of scan.json, kept in
// report/schema/scan.v1.schema.json; this package's tests validate every
// rendering against it.
//
//go:embed schema/scan.v1.schema.json
var ScanSchemaJSON []byte

// Scan is scan.json: one scheduled scan of a recent window. Field names are a
// contract (design.md, "Report"); texts are English.
type Scan struct {
	// Schema is always "aftermath.scan/v1".
	Schema string `json:"schema"`
	// Window is the judged window [now-since, now) and the zone local times
	// are shown in.
	Window Window `json:"window"`
	// Baseline says what the window was compared with.
	Baseline scan.BaselineInfo `json:"baseline"`
	// Anomalous is true when an anomaly is warning or critical (exit 1).
	Anomalous bool `json:"anomalous"`
	// Judged is false when the scan could not judge the window: no
	// access-log lines in it, or more than half of it without any.
	// NotJudged says why. A scan not judged never reads as a quiet window:
	// anomalous false then means only that nothing was seen.
	Judged    bool   `json:"judged"`
	NotJudged string `json:"not_judged,omitempty"`
	// NotJudgedText is NotJudged as said by the catalog, for scan.md and
	// the terminal in their language.
	NotJudgedText prose.Text `json:"-"`
	// Unknown lists the window's stretches without access-log lines (a
	// missing head, gaps, a missing end): unknown minutes, not quiet ones.
	Unknown []sources.Stretch `json:"unknown,omitempty"`
	// Anomalies, most severe first: each with its kind, severity, start,
	// observed and baseline values, score and summary.
	Anomalies []scan.Anomaly `json:"anomalies"`
	// Measures are the site-wide measures of the window against their
	// baseline, anomalous or not.
	Measures []scan.Measure `json:"measures"`
	// Findings and Checks are what the detectors of `analyze` concluded on
	// the window.
	Findings []detect.Finding `json:"findings"`
	Checks   []detect.Check   `json:"checks"`
	// Delivery is what the webhook was sent, when one was configured.
	Delivery *Delivery `json:"delivery,omitempty"`
	// DataQuality lists what could not be read or compared, and a failed
	// delivery.
	DataQuality []sources.QualityNote `json:"data_quality"`
	// Read is what the scan read (lines, bytes, samples).
	Read scan.Read `json:"read"`
	// Rules are the rate-limit zones proposed for the window's crawler_burst
	// findings, each with its backtest over the window: the next step a
	// crawler anomaly names. Set by the caller after BuildScan.
	Rules []rule.Rule `json:"rules"`
	// Caddyfile is the rules file for them (rules.caddy: how to deploy,
	// then the rate_limit block).
	Caddyfile string `json:"caddyfile,omitempty"`
}

// Delivery records one webhook message.
type Delivery struct {
	// Target is the webhook's scheme and host: its path holds a secret and is
	// never written.
	Target string `json:"target"`
	// Events are the state changes the message announced ("opened
	// crawler_burst Chrome / zh-cn / logged out", ...). Empty: nothing new, no
	// message sent.
	Events []string `json:"events"`
	// Sent is true when the webhook accepted the message; Attempts counts the
	// tries.
	Sent     bool `json:"sent"`
	Attempts int  `json:"attempts"`
	// Error says why it was not delivered.
	Error string `json:"error,omitempty"`
}

// BuildScan assembles scan.json from a scan's result; tz names the zone local
// times are shown in ("" is UTC).
func BuildScan(res *scan.Result, tz string) *Scan {
	if tz == "" {
		tz = "UTC"
	}
	s := &Scan{
		Schema:        ScanSchema,
		Window:        Window{From: res.Window.From.UTC(), To: res.Window.To.UTC(), TZ: tz},
		Baseline:      res.Baseline,
		Anomalous:     res.Anomalous(),
		Judged:        res.Judged,
		NotJudged:     res.NotJudged,
		NotJudgedText: res.NotJudgedText,
		Unknown:       res.Unknown,
		Anomalies:     res.Anomalies,
		Measures:      res.Measures,
		Findings:      res.Findings,
		Checks:        res.Checks,
		DataQuality:   res.DataQuality,
		Read:          res.Read,
	}
	s.normalize()
	return s
}

// normalize makes every list non-null so consumers can iterate without checks.
func (s *Scan) normalize() {
	if s.Anomalies == nil {
		s.Anomalies = []scan.Anomaly{}
	}
	if s.Measures == nil {
		s.Measures = []scan.Measure{}
	}
	if s.Findings == nil {
		s.Findings = []detect.Finding{}
	}
	if s.Checks == nil {
		s.Checks = []detect.Check{}
	}
	if s.DataQuality == nil {
		s.DataQuality = []sources.QualityNote{}
	}
	if s.Baseline.Slots == nil {
		s.Baseline.Slots = []scan.Slot{}
	}
	if s.Rules == nil {
		s.Rules = []rule.Rule{}
	}
	if s.Delivery != nil && s.Delivery.Events == nil {
		s.Delivery.Events = []string{}
	}
}

// RenderScanJSON encodes scan.json (encoding/json escapes <, > and &).
func RenderScanJSON(s *Scan) ([]byte, error) {
	s.normalize()
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("report: encode scan.json: %w", err)
	}
	return append(data, '\n'), nil
}

// scanTemplate names the Markdown template of scan.md in a language, in
// package templates.
func scanTemplate(lang string) string { return "scan." + lang + ".md.tmpl" }

// RenderScanMarkdown renders scan.md in lang. Every value that comes from a
// log line (fingerprints, paths, summaries quoting them) goes through
// MarkdownCell. The sentences of the scan and its detectors are said in
// lang; scan.json keeps their English.
func RenderScanMarkdown(s *Scan, lang string) ([]byte, error) {
	s.normalize()
	if !validLang(lang) {
		return nil, fmt.Errorf("report: scan.md: no language %q (one of %s)", lang, strings.Join(Langs, ", "))
	}
	loc, err := time.LoadLocation(s.Window.TZ)
	if err != nil {
		return nil, fmt.Errorf("report: time zone %q: %w", s.Window.TZ, err)
	}
	p := newPrinter(lang, loc, s.Window.To)
	words := wordTable(p, p.say("scan.words", nil))
	fm := funcs(loc)
	fm["float"] = num
	fm["date"] = func(t time.Time) string { return t.In(loc).Format("Mon 2006-01-02 15:04") }
	fm["day"] = func(t time.Time) string { return t.In(loc).Format("2006-01-02 15:04") }
	// since shows a start on the window's day as a clock time, others with their date.
	fm["since"] = func(t time.Time) string { return sinceIn(lang, t, s.Window.To, loc) }
	// said is a text of the scan, its detectors or its notes in lang; the
	// English it was said with when it has no message (read back from
	// scan.json).
	fm["said"] = func(t prose.Text, english string) string { return p.text(t, english) }
	// word is a word of the "scan.words" table (severities, outcomes).
	fm["word"] = func(key any) string {
		k := fmt.Sprint(key)
		if w, ok := words[k]; ok {
			return w
		}
		return k
	}
	fm["alarming"] = func(as []scan.Anomaly) int {
		n := 0
		for i := range as {
			if as[i].Alarming() {
				n++
			}
		}
		return n
	}
	fm["pct"] = p.pct
	fm["josa"] = func(pair, word string) string { return josa(word, pair) }
	// ruleFor is the proposed rule that answers one of an anomaly's findings.
	fm["ruleFor"] = func(a scan.Anomaly) *scanRule {
		for i := range s.Rules {
			for _, id := range a.Findings {
				if s.Rules[i].Finding == id {
					return newScanRule(s.Rules[i], lang)
				}
			}
		}
		return nil
	}
	name := scanTemplate(lang)
	t, err := template.New(name).Funcs(fm).ParseFS(templates.FS, name)
	if err != nil {
		return nil, fmt.Errorf("report: template %s: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, s); err != nil {
		return nil, fmt.Errorf("report: template %s: %w", name, err)
	}
	if err := p.err(); err != nil {
		return nil, fmt.Errorf("report: %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// scanRule is a proposed rule as scan.md shows it: the block with the steps
// to deploy it (rule.DeploySteps, the same lines rules.caddy opens with),
// in a fence longer than any run of backticks in it.
type scanRule struct {
	rule.Rule
	Block, Fence string
}

func newScanRule(r rule.Rule, lang string) *scanRule {
	var b strings.Builder
	for _, l := range rule.DeployStepsIn(lang) {
		b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
	b.WriteString(r.Caddyfile)
	fence := "```"
	for strings.Contains(b.String(), fence) {
		fence += "`"
	}
	return &scanRule{Rule: r, Block: strings.TrimRight(b.String(), "\n"), Fence: fence}
}

// WriteScan writes scan.json (English) and scan.md (in lang) into dir
// (created if needed), each whole or not at all, and returns their paths.
func WriteScan(dir string, s *Scan, lang string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: output directory: %w", err)
	}
	js, err := RenderScanJSON(s)
	if err != nil {
		return nil, err
	}
	md, err := RenderScanMarkdown(s, lang)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range []struct {
		name string
		data []byte
	}{{ScanJSONFile, js}, {ScanMarkdownFile, md}} {
		p := filepath.Join(dir, f.name)
		if err := writeFile(p, f.data); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// PrintScanSummary writes the short terminal summary of a scan in lang: one
// line of verdict, the anomalies as a table, the notes, then the paths
// written.
func PrintScanSummary(w io.Writer, s *Scan, lang string, paths ...string) {
	loc, err := time.LoadLocation(s.Window.TZ)
	if err != nil {
		loc = time.UTC
	}
	if !validLang(lang) {
		lang = LangEN
	}
	p := newPrinter(lang, loc, s.Window.To)
	words := wordTable(p, p.say("scan.words", nil))
	word := func(k string) string {
		if w, ok := words[k]; ok {
			return w
		}
		return k
	}
	alarming := 0
	for i := range s.Anomalies {
		if s.Anomalies[i].Alarming() {
			alarming++
		}
	}
	verdict := struct {
		Alarming, Info int
		Judged         bool
		NotJudged      string
		Unknown        time.Duration
	}{alarming, len(s.Anomalies), s.Judged, TerminalSafe(p.text(s.NotJudgedText, s.NotJudged)), unknownSpan(s.Unknown)}
	fmt.Fprintln(w, p.say("scan.terminal.head", struct {
		From, To, TZ string
		Method       string
		Used, Slots  int
		Verdict      string
	}{s.Window.From.In(loc).Format("2006-01-02 15:04"), s.Window.To.In(loc).Format("15:04"), cell(s.Window.TZ),
		p.text(s.Baseline.MethodText, s.Baseline.Method), s.Baseline.Used, len(s.Baseline.Slots), p.say("scan.terminal.verdict", verdict)}))
	if len(s.Anomalies) > 0 {
		t := NewTable(w)
		t.Header(word("severity"), word("kind"), word("key"), word("since"), word("observed"), word("usual"), word("score"))
		for _, a := range s.Anomalies {
			usual, score := num(a.Baseline), strconv.FormatFloat(a.Score, 'f', 1, 64)
			if a.NoBaseline {
				usual, score = "-", "-"
			}
			_ = t.Append(cell(word("severity_"+string(a.Severity))), cell(string(a.Kind)), cell(p.text(a.KeyText, a.Key)),
				sinceIn(lang, a.Start, s.Window.To, loc), num(a.Observed), usual, score)
		}
		_ = t.Render()
	}
	if d := s.Delivery; d != nil {
		fmt.Fprintln(w, p.say("scan.terminal.webhook", struct {
			Target, Error    string
			Events, Attempts int
			Sent             bool
		}{cell(d.Target), TerminalSafe(d.Error), len(d.Events), d.Attempts, d.Sent}))
	}
	for _, n := range s.DataQuality {
		if n.Severity != sources.SeverityInfo {
			fmt.Fprintf(w, "%s (%s): %s\n", cell(word("severity_"+string(n.Severity))), cell(n.Source), TerminalSafe(p.text(n.Text, n.Message)))
		}
	}
	for _, path := range paths {
		fmt.Fprintln(w, p.say("terminal.wrote", TerminalSafe(path)))
	}
}

// unknownSpan sums stretches without lines, to the minute.
func unknownSpan(us []sources.Stretch) time.Duration {
	var d time.Duration
	for _, u := range us {
		d += u.To.Sub(u.From)
	}
	return d.Round(time.Minute)
}

// sinceIn renders an anomaly's start in lang: a clock time within a day of
// the window's end, else with its date ("Sep 30 11:05", "09-30 11:05").
func sinceIn(lang string, t, end time.Time, loc *time.Location) string {
	if d := end.Sub(t); d >= 0 && d < 24*time.Hour {
		return t.In(loc).Format("15:04")
	}
	if lang == LangEN {
		return t.In(loc).Format("Jan 2 15:04")
	}
	return t.In(loc).Format("01-02 15:04")
}

// num renders a value for the terminal: whole numbers with separators.
func num(v float64) string {
	if v == float64(int64(v)) || v >= 100 || v <= -100 {
		return formatInt(v)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
