package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/scan"
	"github.com/aftermath-forensics/aftermath/rules/rule"
	"github.com/aftermath-forensics/aftermath/sources"
)

const scanSchemaURL = "https://github.com/aftermath-forensics/aftermath/report/schema/scan.v1.schema.json"

// scanSchemaErr validates data against scan.v1.schema.json (which refers to
// report.v1.schema.json for findings, checks and notes).
func scanSchemaErr(t *testing.T, data []byte) error {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for url, raw := range map[string][]byte{scanSchemaURL: ScanSchemaJSON, schemaURL: SchemaJSON} {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("schema %s: %v", url, err)
		}
		if err := c.AddResource(url, doc); err != nil {
			t.Fatalf("schema %s: %v", url, err)
		}
	}
	sch, err := c.Compile(scanSchemaURL)
	if err != nil {
		t.Fatalf("schema: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("scan.json: %v", err)
	}
	return sch.Validate(inst)
}

var scanNow = time.Date(2026, 10, 21, 18, 0, 0, 0, time.UTC) // 03:00 KST

// crawlerScan is the scan of the crawler's hour, as detect/scan reports it.
func crawlerScan() *scan.Result {
	w := scan.Range{From: scanNow.Add(-time.Hour), To: scanNow}
	return &scan.Result{
		Now: scanNow, Window: w, Judged: true,
		Baseline: scan.BaselineInfo{Method: "the same hours on each previous day", Days: 7, Used: 6, Seasonal: true,
			Slots: []scan.Slot{{Range: scan.Range{From: w.From.AddDate(0, 0, -1), To: w.To.AddDate(0, 0, -1)}, Covered: true, Requests: 358}}},
		Anomalies: []scan.Anomaly{
			{Kind: detect.KindCrawlerBurst, Severity: scan.SeverityCritical, Key: "Chrome / zh-cn / logged out", Start: w.From,
				Metric: "requests per 10 minutes at the peak", Observed: 8895, Baseline: 0.4, Score: 16998.2,
				Summary:  "Chrome / zh-cn / logged out sent 21,279 requests from 20,819 addresses.",
				Findings: []string{"crawler_burst-1"},
				Fingerprint: &detect.Fingerprint{UserAgent: "Chrome 121", AcceptLanguage: "zh-cn", LoggedIn: "no", SecChUa: "absent",
					Paths: []string{"Special:Contributions (path)"}},
				Facts: &scan.CrawlerRiseFacts{DistinctIPs: 20819}},
			{Kind: scan.KindErrorRate, Severity: scan.SeverityCritical, Start: w.From.Add(18 * time.Minute), Metric: "failed responses in the window",
				Observed: 11312, Score: 11312, Summary: "11,312 responses failed."},
			{Kind: scan.KindSurge, Severity: scan.SeverityInfo, Start: w.From, Metric: "client requests in the window",
				Observed: 27818, Baseline: 742, Score: 172.3, Summary: "Requests rose; a surge, not an attack."},
			{Kind: detect.KindConfigChange, Severity: scan.SeverityInfo, Start: w.From.AddDate(0, 0, -20), Summary: "listen.backlog 511 -> 4096."},
		},
		Measures: []scan.Measure{{Name: "failed responses (5xx, 429, late)", Observed: 11312, Baseline: scan.Baseline{N: 6}, Score: 11312, Anomalous: true}},
		Findings: []detect.Finding{{ID: "crawler_burst-1", Kind: detect.KindCrawlerBurst, Start: w.From, End: w.To, Confidence: 0.9,
			Summary: "a crawler", Facts: detect.MustParseFacts(detect.KindCrawlerBurst, map[string]float64{"peak_per_10m": 8895})}},
		Checks:      []detect.Check{{Name: "crawler_burst", Outcome: detect.OutcomeFound, Findings: []string{"crawler_burst-1"}}},
		DataQuality: []sources.QualityNote{{Source: "scan", Severity: sources.SeverityInfo, Message: "a note"}},
		Read:        scan.Read{AccessFiles: 1, AccessLines: 213804, RawRange: scan.Range{From: w.From.Add(-3 * time.Hour), To: w.To}, RawLines: 42818, SlotLines: 2058},
	}
}

// hostileScan puts attacker-controlled text wherever a log line can reach.
func hostileScan() *scan.Result {
	r := crawlerScan()
	for i := range r.Anomalies {
		a := &r.Anomalies[i]
		a.Summary += " " + hostile
		a.Key += hostile
		if a.Fingerprint != nil {
			a.Fingerprint.UserAgent += hostile
			a.Fingerprint.AcceptLanguage += hostile
			a.Fingerprint.Paths = []string{"/w/" + hostile, hostile + "|path"}
		}
	}
	r.Findings[0].Summary = hostile
	r.Checks[0].Reason = hostile
	r.DataQuality = append(r.DataQuality, sources.QualityNote{Source: "access" + hostile, Severity: sources.SeverityWarning, Message: hostile})
	return r
}

func TestScanJSONMatchesSchema(t *testing.T) {
	quiet := &scan.Result{Now: scanNow, Window: scan.Range{From: scanNow.Add(-time.Hour), To: scanNow}, Judged: true,
		Baseline: scan.BaselineInfo{Method: "the same hours on each previous day", Days: 7}}
	failed := BuildScan(crawlerScan(), "Asia/Seoul")
	failed.Delivery = &Delivery{Target: "https://hooks.slack.com", Events: []string{"opened crawler_burst: critical"}, Attempts: 4, Error: "HTTP 500"}
	tests := map[string]*Scan{
		"crawler":          BuildScan(crawlerScan(), "Asia/Seoul"),
		"hostile":          BuildScan(hostileScan(), "Asia/Seoul"),
		"quiet":            BuildScan(quiet, ""),
		"delivery failure": failed,
		"not judged": BuildScan(&scan.Result{Now: scanNow, Window: scan.Range{From: scanNow.Add(-time.Hour), To: scanNow}, Baseline: quiet.Baseline,
			NotJudged: "the access log has no lines for 32 min of the window's 60 min",
			Unknown:   []sources.Stretch{{From: scanNow.Add(-32 * time.Minute), To: scanNow, Kind: sources.StretchTail}}}, "UTC"),
	}
	for name, s := range tests {
		t.Run(name, func(t *testing.T) {
			data, err := RenderScanJSON(s)
			if err != nil {
				t.Fatal(err)
			}
			if err := scanSchemaErr(t, data); err != nil {
				t.Errorf("scan.json does not match its schema: %v", err)
			}
			for _, key := range []string{`"anomalies": [`, `"data_quality": [`, `"schema": "aftermath.scan/v1"`} {
				if !bytes.Contains(data, []byte(key)) {
					t.Errorf("scan.json lacks %s", key)
				}
			}
		})
	}
}

func TestScanSchemaRejects(t *testing.T) {
	good, err := RenderScanJSON(BuildScan(crawlerScan(), "Asia/Seoul"))
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]func(m map[string]any){
		"wrong schema id":    func(m map[string]any) { m["schema"] = "aftermath.report/v1" },
		"unknown kind":       func(m map[string]any) { anomaly(m)["kind"] = "gremlins" },
		"unknown severity":   func(m map[string]any) { anomaly(m)["severity"] = "meh" },
		"anomaly no score":   func(m map[string]any) { delete(anomaly(m), "score") },
		"no anomalies":       func(m map[string]any) { delete(m, "anomalies") },
		"time not RFC 3339":  func(m map[string]any) { anomaly(m)["start"] = "02:00" },
		"negative read":      func(m map[string]any) { m["read"].(map[string]any)["raw_lines"] = -1 },
		"no baseline method": func(m map[string]any) { delete(m["baseline"].(map[string]any), "method") },
	}
	for name, edit := range tests {
		t.Run(name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal(good, &m); err != nil {
				t.Fatal(err)
			}
			edit(m)
			data, _ := json.Marshal(m)
			if scanSchemaErr(t, data) == nil {
				t.Errorf("the schema accepted a scan with %s", name)
			}
		})
	}
}

func anomaly(m map[string]any) map[string]any { return m["anomalies"].([]any)[0].(map[string]any) }

// TestScanMarkdownInert: log text cannot add a heading, a link, HTML or a
// table cell to scan.md, in any language.
func TestScanMarkdownInert(t *testing.T) {
	for _, lang := range Langs {
		t.Run(lang, func(t *testing.T) { scanMarkdownInert(t, lang) })
	}
}

func scanMarkdownInert(t *testing.T, lang string) {
	md, err := RenderScanMarkdown(BuildScan(hostileScan(), "Asia/Seoul"), lang)
	if err != nil {
		t.Fatal(err)
	}
	text := string(md)
	unescaped := func(ch string) *regexp.Regexp { return regexp.MustCompile(`(^|[^\\])(\\\\)*` + regexp.QuoteMeta(ch)) }
	for _, bad := range []struct {
		name string
		re   *regexp.Regexp
	}{
		{"raw HTML", regexp.MustCompile(`<`)},
		{"link or image", unescaped("](")},
		{"code span", unescaped("`")},
		{"template action", regexp.MustCompile(`\{\{`)},
		{"bare URL autolink", regexp.MustCompile(`[a-z]://`)},
		{"control or bidi character", regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f\u202e]")},
		{"injected heading", regexp.MustCompile(`(?m)^\\?#+ heading`)},
		{"injected list item", regexp.MustCompile(`(?m)^- item`)},
	} {
		if loc := bad.re.FindStringIndex(text); loc != nil {
			t.Errorf("%s in scan.md: …%s…", bad.name, text[max(0, loc[0]-60):min(len(text), loc[1]+60)])
		}
	}
	// Every table row keeps its columns: an escaped | is not a cell.
	cells := regexp.MustCompile(`(^|[^\\])\|`)
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "| critical | crawler") || strings.HasPrefix(line, "| info | surge") ||
			strings.HasPrefix(line, "| 심각 | crawler") || strings.HasPrefix(line, "| 정보 | surge") {
			if n := len(cells.FindAllString(line, -1)); n != 9 {
				t.Errorf("anomaly row has %d cell borders, want 9: %s", n, line)
			}
		}
	}
}

func TestScanMarkdownReads(t *testing.T) {
	md, err := RenderScanMarkdown(BuildScan(crawlerScan(), "Asia/Seoul"), LangEN)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Scan Thu 2026-10-22 02:00 – 03:00 (Asia/Seoul)",
		"**2 anomalies** in the window.",
		"| critical | crawler\\_burst | Chrome / zh-cn / logged out | 02:00 | requests per 10 minutes at the peak | 8,895 | 0.40 | 16998.2 |",
		"| info | config\\_change |  | Oct 2 02:00 |",
		"| lines in the baseline slots (aggregated) | 2,058 |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("scan.md lacks %q:\n%s", want, md)
		}
	}
}

func TestWriteScanAndSummary(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	s := BuildScan(crawlerScan(), "Asia/Seoul")
	s.Delivery = &Delivery{Target: "https://hooks.example", Events: []string{"opened x"}, Attempts: 4, Error: "HTTP 500: \x1b[31mred"}
	paths, err := WriteScan(dir, s, LangEN)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || filepath.Base(paths[0]) != ScanJSONFile || filepath.Base(paths[1]) != ScanMarkdownFile {
		t.Fatalf("paths %v", paths)
	}
	for _, p := range paths {
		if info, err := os.Stat(p); err != nil || info.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
	var out bytes.Buffer
	PrintScanSummary(&out, s, LangEN, paths...)
	got := out.String()
	for _, want := range []string{"2 anomalies", "crawler_burst", "NOT delivered after 4 attempt(s)", "wrote " + paths[1]} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") {
		t.Errorf("summary passes an escape sequence to the terminal:\n%q", got)
	}
	quiet := BuildScan(&scan.Result{Now: scanNow, Window: scan.Range{From: scanNow.Add(-time.Hour), To: scanNow}, Judged: true}, "UTC")
	out.Reset()
	PrintScanSummary(&out, quiet, LangEN)
	if !strings.Contains(out.String(), "nothing anomalous") {
		t.Errorf("quiet summary: %s", out.String())
	}
	// A window the scan could not see is never told as quiet.
	blind := BuildScan(&scan.Result{Now: scanNow, Window: scan.Range{From: scanNow.Add(-time.Hour), To: scanNow},
		NotJudged: "no access-log lines from 17:00 to 18:00"}, "UTC")
	out.Reset()
	PrintScanSummary(&out, blind, LangEN)
	if got := out.String(); strings.Contains(got, "nothing anomalous") || !strings.Contains(got, "could not judge: no access-log lines") {
		t.Errorf("summary of a window not judged: %s", got)
	}
	md, err := RenderScanMarkdown(blind, LangEN)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(md), "Nothing anomalous") || !strings.Contains(string(md), "**Could not judge this window**: no access-log lines from 17:00 to 18:00.") {
		t.Errorf("scan.md of a window not judged:\n%s", md)
	}
}

// TestScanMarkdownNextStep: a crawler anomaly carries its proposed rule, with
// the deploy steps rules.caddy opens with and the backtest over the window; a
// slot the logs cover only in part says so next to its count, never "no"; a
// finding that names no measured usual value shows none.
func TestScanMarkdownNextStep(t *testing.T) {
	res := crawlerScan()
	res.Baseline.Slots = append(res.Baseline.Slots,
		scan.Slot{Range: scan.Range{From: res.Window.From.AddDate(0, 0, -2), To: res.Window.To.AddDate(0, 0, -2)}, Requests: 1531},
		scan.Slot{Range: scan.Range{From: res.Window.From.AddDate(0, 0, -3), To: res.Window.To.AddDate(0, 0, -3)}})
	res.Anomalies = append(res.Anomalies, scan.Anomaly{Kind: detect.KindHealthcheckStarved, Severity: scan.SeverityCritical, Start: res.Window.From,
		Metric: "estimated wait of a queued health check (s)", Observed: 27.4, NoBaseline: true, Summary: "against a 10 s health timeout"})
	doc := BuildScan(res, "Asia/Seoul")
	doc.Rules = []rule.Rule{{Name: "tools_zh_cn_logged_out", Finding: "crawler_burst-1", Events: 10, Window: "10m",
		Caddyfile: "rate_limit {\n\tzone tools_zh_cn_logged_out {\n\t\tkey tools_zh_cn_logged_out\n\t\twindow 10m\n\t\tevents 10\n\t}\n}\n",
		Backtest: rule.Backtest{CrawlerRequests: 15850, CrawlerRefused: 15788, CrawlerRefusedShare: 15788.0 / 15850,
			FingerprintReaderRequests: 8, OtherLoggedOutRequests: 3493, BaselineRequests: 11439}}}
	md, err := RenderScanMarkdown(doc, LangEN)
	if err != nil {
		t.Fatal(err)
	}
	text := string(md)
	crawler := text[strings.Index(text, "### critical: crawler\\_burst"):]
	crawler = crawler[:strings.Index(crawler[4:], "### ")+4]
	for _, want := range []string{
		"**Do this now:** limit it with the rate\\_limit zone tools\\_zh\\_cn\\_logged\\_out",
		"# 1. Needs the caddy-ratelimit module, version v0.1.0",
		"#      " + rule.BuildCommand,
		"#          " + rule.OrderOption,
		"#      caddy validate --config Caddyfile",
		"\tzone tools_zh_cn_logged_out {",
		"refuses 15,788 of the crawler's 15,850 requests (99.6%), 0 of 8 requests of readers who share its fingerprint, 0 of 3,493 other logged-out requests",
	} {
		if !strings.Contains(crawler, want) {
			t.Errorf("the crawler anomaly lacks %q:\n%s", want, crawler)
		}
	}
	for _, want := range []string{
		"| partly: not compared | 1,531 |",
		"| no | 0 |",
		"| critical | healthcheck\\_starved |  | 02:00 | estimated wait of a queued health check (s) | 27.40 | - | - |",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("scan.md lacks %q", want)
		}
	}
	if strings.Count(text, "Do this now") != 1 {
		t.Errorf("only the crawler anomaly has a rule; scan.md has %d next steps", strings.Count(text, "Do this now"))
	}
	js, err := RenderScanJSON(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := scanSchemaErr(t, js); err != nil {
		t.Errorf("scan.json with rules: %v", err)
	}
}
