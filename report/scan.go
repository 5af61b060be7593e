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
		Schema:      ScanSchema,
		Window:      Window{From: res.Window.From.UTC(), To: res.Window.To.UTC(), TZ: tz},
		Baseline:    res.Baseline,
		Anomalous:   res.Anomalous(),
		Judged:      res.Judged,
		NotJudged:   res.NotJudged,
		Unknown:     res.Unknown,
		Anomalies:   res.Anomalies,
		Measures:    res.Measures,
		Findings:    res.Findings,
		Checks:      res.Checks,
		DataQuality: res.DataQuality,
		Read:        res.Read,
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

// scanTemplate is the Markdown template of scan.md in package templates.
const scanTemplate = "scan.md.tmpl"

// RenderScanMarkdown renders scan.md. Every value that comes from a log line
// (fingerprints, paths, summaries quoting them) goes through MarkdownCell.
func RenderScanMarkdown(s *Scan) ([]byte, error) {
	s.normalize()
	loc, err := time.LoadLocation(s.Window.TZ)
	if err != nil {
		return nil, fmt.Errorf("report: time zone %q: %w", s.Window.TZ, err)
	}
	fm := funcs(loc)
	fm["float"] = num
	fm["date"] = func(t time.Time) string { return t.In(loc).Format("Mon 2006-01-02 15:04") }
	// since shows a start on the window's day as a clock time, others with their date.
	fm["since"] = func(t time.Time) string { return since(t, s.Window.To, loc) }
	fm["alarming"] = func(as []scan.Anomaly) int {
		n := 0
		for i := range as {
			if as[i].Alarming() {
				n++
			}
		}
		return n
	}
	fm["pct"] = newPrinter(LangEN, loc, s.Window.To).pct
	// ruleFor is the proposed rule that answers one of an anomaly's findings.
	fm["ruleFor"] = func(a scan.Anomaly) *scanRule {
		for i := range s.Rules {
			for _, id := range a.Findings {
				if s.Rules[i].Finding == id {
					return newScanRule(s.Rules[i])
				}
			}
		}
		return nil
	}
	t, err := template.New(scanTemplate).Funcs(fm).ParseFS(templates.FS, scanTemplate)
	if err != nil {
		return nil, fmt.Errorf("report: template %s: %w", scanTemplate, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, s); err != nil {
		return nil, fmt.Errorf("report: template %s: %w", scanTemplate, err)
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

func newScanRule(r rule.Rule) *scanRule {
	var b strings.Builder
	for _, l := range rule.DeploySteps() {
		b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
	b.WriteString(r.Caddyfile)
	fence := "```"
	for strings.Contains(b.String(), fence) {
		fence += "`"
	}
	return &scanRule{Rule: r, Block: strings.TrimRight(b.String(), "\n"), Fence: fence}
}

// WriteScan writes scan.json and scan.md into dir (created if needed), each
// whole or not at all, and returns their paths.
func WriteScan(dir string, s *Scan) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: output directory: %w", err)
	}
	js, err := RenderScanJSON(s)
	if err != nil {
		return nil, err
	}
	md, err := RenderScanMarkdown(s)
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

// PrintScanSummary writes the short terminal summary of a scan: one line of
// verdict, the anomalies as a table, the notes, then the paths written.
func PrintScanSummary(w io.Writer, s *Scan, paths ...string) {
	loc, err := time.LoadLocation(s.Window.TZ)
	if err != nil {
		loc = time.UTC
	}
	alarming := 0
	for i := range s.Anomalies {
		if s.Anomalies[i].Alarming() {
			alarming++
		}
	}
	verdict := "nothing anomalous"
	switch {
	case alarming > 0:
		verdict = fmt.Sprintf("%d anomal%s", alarming, map[bool]string{true: "y", false: "ies"}[alarming == 1])
		if !s.Judged {
			verdict += "; the rest could not be judged: " + TerminalSafe(s.NotJudged)
		}
	case !s.Judged:
		verdict = "could not judge: " + TerminalSafe(s.NotJudged)
	case len(s.Unknown) > 0:
		verdict = fmt.Sprintf("nothing anomalous in the minutes the access log covers (%s unknown)", unknownSpan(s.Unknown))
	case len(s.Anomalies) > 0:
		verdict = fmt.Sprintf("nothing anomalous (%d for information)", len(s.Anomalies))
	}
	fmt.Fprintf(w, "scan %s to %s (%s) against %s, %d of %d days: %s\n",
		s.Window.From.In(loc).Format("2006-01-02 15:04"), s.Window.To.In(loc).Format("15:04"), cell(s.Window.TZ),
		s.Baseline.Method, s.Baseline.Used, len(s.Baseline.Slots), verdict)
	if len(s.Anomalies) > 0 {
		t := NewTable(w)
		t.Header("severity", "kind", "key", "since", "observed", "usual", "score")
		for _, a := range s.Anomalies {
			usual, score := num(a.Baseline), strconv.FormatFloat(a.Score, 'f', 1, 64)
			if a.NoBaseline {
				usual, score = "-", "-"
			}
			_ = t.Append(cell(string(a.Severity)), cell(string(a.Kind)), cell(a.Key), since(a.Start, s.Window.To, loc),
				num(a.Observed), usual, score)
		}
		_ = t.Render()
	}
	if d := s.Delivery; d != nil {
		switch {
		case len(d.Events) == 0:
			fmt.Fprintf(w, "webhook %s: nothing new to announce\n", cell(d.Target))
		case d.Sent:
			fmt.Fprintf(w, "webhook %s: announced %d change(s) in %d attempt(s)\n", cell(d.Target), len(d.Events), d.Attempts)
		default:
			fmt.Fprintf(w, "webhook %s: NOT delivered after %d attempt(s): %s\n", cell(d.Target), d.Attempts, TerminalSafe(d.Error))
		}
	}
	for _, n := range s.DataQuality {
		if n.Severity != sources.SeverityInfo {
			fmt.Fprintf(w, "%s (%s): %s\n", cell(string(n.Severity)), cell(n.Source), TerminalSafe(n.Message))
		}
	}
	for _, p := range paths {
		fmt.Fprintln(w, "wrote", TerminalSafe(p))
	}
}

// unknownSpan sums stretches without lines, for the terminal ("32m0s").
func unknownSpan(us []sources.Stretch) string {
	var d time.Duration
	for _, u := range us {
		d += u.To.Sub(u.From)
	}
	return d.Round(time.Minute).String()
}

// since renders an anomaly's start: a clock time within a day of the window's
// end, else with its date.
func since(t, end time.Time, loc *time.Location) string {
	if d := end.Sub(t); d >= 0 && d < 24*time.Hour {
		return t.In(loc).Format("15:04")
	}
	return t.In(loc).Format("Jan 2 15:04")
}

// num renders a value for the terminal: whole numbers with separators.
func num(v float64) string {
	if v == float64(int64(v)) || v >= 100 || v <= -100 {
		return formatInt(v)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}
