// Package notify tells a chat channel what scheduled scans found, once: a
// state file remembers which anomalies were announced, so that an ongoing
// anomaly is announced when it starts, updated when it worsens and closed when
// it ends (one message each), and a webhook delivers Slack-compatible messages
// ({"text": ...}, which Slack, Mattermost, Rocket.Chat and others accept) with
// a timeout and retries.
//
// Only warning and critical anomalies are announced: info (a surge of
// readers, a note below the volume floors) stays in the report. A delivery
// that fails leaves the state as it was, so the next scan announces the same
// changes again instead of losing them.
package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/renameio/v2/maybe"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/scan"
)

// StateSchema identifies the state file's format.
const StateSchema = "aftermath.scan-state/v1"

// DefaultWorsenFactor is Policy.WorsenFactor's default.
const DefaultWorsenFactor = 1.5

// State is the state file (JSON): the anomalies announced and not yet closed.
type State struct {
	// Schema is always "aftermath.scan-state/v1".
	Schema string `json:"schema"`
	// Updated is the time of the last scan that saved it (the scan's now).
	Updated time.Time `json:"updated"`
	// Open maps an anomaly's ID (kind and key) to what was last announced.
	Open map[string]*Entry `json:"open"`
}

// Entry is one announced anomaly.
type Entry struct {
	Kind     detect.Kind   `json:"kind"`
	Key      string        `json:"key"`
	Severity scan.Severity `json:"severity"`
	Metric   string        `json:"metric"`
	// Observed, Baseline and Score are as last announced: worsening is
	// measured against them, not against every scan.
	Observed float64 `json:"observed"`
	Baseline float64 `json:"baseline"`
	Score    float64 `json:"score"`
	// Start is when the anomaly began (as first announced).
	Start time.Time `json:"start"`
	// Announced is the scan time of the last announcement; LastSeen of the
	// last scan that still found it.
	Announced time.Time `json:"announced"`
	LastSeen  time.Time `json:"last_seen"`
	Summary   string    `json:"summary"`
}

// NewState is an empty state.
func NewState() *State { return &State{Schema: StateSchema, Open: map[string]*Entry{}} }

// LoadState reads a state file; a missing file is an empty state (the first
// scheduled run). A file that is not a state is an error: guessing would
// announce everything again, or nothing.
func LoadState(path string) (*State, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return NewState(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("notify: state: %w", err)
	}
	var s State
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("notify: state %s: %w", path, err)
	}
	if s.Schema != StateSchema {
		return nil, fmt.Errorf("notify: state %s: schema %q, want %q", path, s.Schema, StateSchema)
	}
	if s.Open == nil {
		s.Open = map[string]*Entry{}
	}
	return &s, nil
}

// Save writes the state atomically (a temporary file renamed into place), so
// a scan killed mid-write leaves the previous state, never half of one.
func (s *State) Save(path string) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("notify: state: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("notify: state: %w", err)
	}
	// renameio writes a temporary file, syncs it and renames it into place.
	if err := maybe.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("notify: state %s: %w", path, err)
	}
	return nil
}

// EventType is what happened to an anomaly between two scans.
type EventType string

// Event types.
const (
	Opened   EventType = "opened"
	Worsened EventType = "worsened"
	Closed   EventType = "closed"
)

// Event is one change worth a message.
type Event struct {
	// Type is opened, worsened or closed.
	Type EventType
	// Anomaly is the anomaly as this scan found it (for closed: as it was
	// last announced).
	Anomaly scan.Anomaly
	// Previous is what was announced before (worsened, closed).
	Previous *Entry
}

// String names the event for scan.json ("worsened crawler_burst Chrome / zh-cn
// / logged out: warning -> critical").
func (e Event) String() string {
	s := string(e.Type) + " " + e.Anomaly.ID()
	switch {
	case e.Type == Worsened && e.Previous != nil && e.Previous.Severity != e.Anomaly.Severity:
		s += ": " + string(e.Previous.Severity) + " -> " + string(e.Anomaly.Severity)
	case e.Type != Closed:
		s += ": " + string(e.Anomaly.Severity)
	}
	return s
}

// Policy says when an open anomaly is news again.
type Policy struct {
	// WorsenFactor is how much an anomaly's observed value must grow over
	// what was last announced (its score not falling) to be announced as
	// worse (DefaultWorsenFactor when 0). A rise in severity always is.
	WorsenFactor float64
	// UpdateAfter is the least time between two announcements of one anomaly
	// that did not rise in severity: a scan every 10 minutes over an hour's
	// window sees totals grow while the window fills, which is not news.
	UpdateAfter time.Duration
	// CloseAfter is how long an anomaly must have been gone before it is
	// announced as ended; 0 closes it at the first scan that does not find
	// it. Give the window's length, so a 10-minute schedule over an hour's
	// window does not close and reopen an anomaly that flickers.
	CloseAfter time.Duration
}

// Diff compares a scan's anomalies with the state: an alarming anomaly not in
// the state opens, one that rose in severity or grew past the policy worsens,
// and an open one the scan no longer finds alarming closes once it has been
// gone CloseAfter. It returns the events (in the order of anomalies, then the
// closed ones) and the state to save once they are delivered; prev is not
// modified.
func Diff(prev *State, anomalies []scan.Anomaly, now time.Time, p Policy) ([]Event, *State) {
	if p.WorsenFactor <= 0 {
		p.WorsenFactor = DefaultWorsenFactor
	}
	now = now.UTC()
	next := &State{Schema: StateSchema, Updated: now, Open: map[string]*Entry{}}
	var events []Event
	seen := map[string]bool{}
	for _, a := range anomalies {
		if !a.Alarming() || seen[a.ID()] {
			continue
		}
		seen[a.ID()] = true
		old := prev.Open[a.ID()]
		switch {
		case old == nil:
			events = append(events, Event{Type: Opened, Anomaly: a})
			next.Open[a.ID()] = entry(a, a.Start, now)
		case worse(a, old, now, p):
			events = append(events, Event{Type: Worsened, Anomaly: a, Previous: old})
			next.Open[a.ID()] = entry(a, old.Start, now)
		default:
			e := *old
			e.LastSeen = now
			next.Open[a.ID()] = &e
		}
	}
	var gone []string
	for id := range prev.Open {
		if !seen[id] {
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	for _, id := range gone {
		old := prev.Open[id]
		if now.Sub(old.LastSeen) < p.CloseAfter {
			e := *old
			next.Open[id] = &e // gone, but not for long enough to be over
			continue
		}
		events = append(events, Event{Type: Closed, Previous: old, Anomaly: scan.Anomaly{Kind: old.Kind, Key: old.Key,
			Severity: old.Severity, Start: old.Start, Metric: old.Metric, Observed: old.Observed, Baseline: old.Baseline,
			Score: old.Score, Summary: old.Summary}})
	}
	return events, next
}

// worse reports whether a is worse than what was announced: a higher
// severity, or (UpdateAfter since the last announcement) its observed value
// grown by the factor with a score no lower.
func worse(a scan.Anomaly, old *Entry, now time.Time, p Policy) bool {
	if scan.SeverityRank(a.Severity) > scan.SeverityRank(old.Severity) {
		return true
	}
	if now.Sub(old.Announced) < p.UpdateAfter {
		return false
	}
	return a.Observed >= p.WorsenFactor*old.Observed && a.Observed > old.Observed && a.Score >= old.Score
}

func entry(a scan.Anomaly, start, now time.Time) *Entry {
	return &Entry{Kind: a.Kind, Key: a.Key, Severity: a.Severity, Metric: a.Metric, Observed: a.Observed,
		Baseline: a.Baseline, Score: a.Score, Start: start.UTC(), Announced: now.UTC(), LastSeen: now.UTC(), Summary: a.Summary}
}
