// Package report assembles findings and evidence into the postmortem: the
// report.json contract (schema aftermath.report/v1), the timeline and the
// renderings (Markdown, HTML, terminal).
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources"
)

// Schema identifies the report.json format; outside tests read it.
const Schema = "aftermath.report/v1"

// Report is report.json. Field names are a contract (design.md, "Report").
type Report struct {
	Schema          string                `json:"schema"`
	Window          Window                `json:"window"`
	Impact          Impact                `json:"impact"`
	Findings        []detect.Finding      `json:"findings"`
	Checks          []detect.Check        `json:"checks"`
	Timeline        []Moment              `json:"timeline"`
	Causes          []Cause               `json:"causes"`
	Rules           []Rule                `json:"rules"`
	Recommendations []Recommendation      `json:"recommendations"`
	DataQuality     []sources.QualityNote `json:"data_quality"`
	// Evidence summarises the raw inputs (what was read, per-minute counts).
	Evidence Evidence `json:"evidence"`
}

// Window is the analysed period and the zone its local times are shown in.
type Window struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	TZ   string    `json:"tz"`
}

// Impact is what users saw.
type Impact struct {
	Start          time.Time      `json:"start"`
	End            time.Time      `json:"end"`
	StatusCounts   map[string]int `json:"status_counts"`
	Requests       int            `json:"requests"`
	FailedRequests int            `json:"failed_requests"`
}

// Moment is one timeline row.
type Moment struct {
	Time    time.Time `json:"time"`
	Text    string    `json:"text"`
	Finding string    `json:"finding,omitempty"`
}

// Cause is a ranked explanation that points at a finding.
type Cause struct {
	Finding     string `json:"finding"`
	Rank        int    `json:"rank"`
	Role        string `json:"role,omitempty"`
	Explanation string `json:"explanation"`
}

// Rule is a generated Caddy rule with its backtest.
type Rule struct {
	Name      string         `json:"name"`
	Caddyfile string         `json:"caddyfile"`
	Backtest  map[string]any `json:"backtest"`
}

// Recommendation is config advice with its arithmetic in Why.
type Recommendation struct {
	Target string `json:"target"`
	Key    string `json:"key"`
	Value  string `json:"value"`
	Why    string `json:"why"`
}

// WriteJSON writes r as indented JSON. Slices are never null so that consumers
// can iterate without checks.
func WriteJSON(path string, r *Report) error {
	r.normalize()
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("report %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

func (r *Report) normalize() {
	r.Schema = Schema
	if r.Findings == nil {
		r.Findings = []detect.Finding{}
	}
	if r.Checks == nil {
		r.Checks = []detect.Check{}
	}
	if r.Timeline == nil {
		r.Timeline = []Moment{}
	}
	if r.Causes == nil {
		r.Causes = []Cause{}
	}
	if r.Rules == nil {
		r.Rules = []Rule{}
	}
	if r.Recommendations == nil {
		r.Recommendations = []Recommendation{}
	}
	if r.DataQuality == nil {
		r.DataQuality = []sources.QualityNote{}
	}
	if r.Impact.StatusCounts == nil {
		r.Impact.StatusCounts = map[string]int{}
	}
}
