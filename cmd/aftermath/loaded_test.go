package main

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/analysis"
	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/fpmlog"
)

// loadedEvidence is what analyze reads from a bundle before any detector
// runs: the access log's requests aggregated by minute and by fingerprint,
// the other sources' events, each source's coverage and the data-quality
// notes of the reading. Two layouts of the same evidence must load the same
// (what the detectors, the rules and the report make of it then follows);
// TestEvidenceLayouts compares what they load, and analyzes one of them in
// full.
type loadedEvidence struct {
	Requests    int
	First, Last time.Time
	Minutes     []detect.Minute
	Clusters    []detect.Cluster
	Health      []sources.HealthEvent
	// FPM is php-fpm's events, their times in UTC (the host's log is read
	// in its zone: the same instants, another Location).
	FPM           []fpmlog.Event
	Changes       []sources.Change
	MetricSamples int64
	// Coverage without the files each source was read from.
	Coverage []sources.Coverage
	// Notes are the data-quality notes, "severity: message".
	Notes []string
	// Incomplete is analyze's exit 1 for what was read (sources.Problems).
	Incomplete bool
}

// loadLayout loads a bundle as analyze --bundle dir does (logTZ is its
// --log-tz, "" for none), up to the detectors.
func loadLayout(t *testing.T, dir, logTZ string) loadedEvidence {
	t.Helper()
	l, err := loadLayoutErr(dir, logTZ)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func loadLayoutErr(dir, logTZ string) (loadedEvidence, error) {
	f := &analyzeFlags{bundle: dir, logTZ: logZone(logTZ)}
	in, cleanup, err := f.offlineInputs(nil)
	if err != nil {
		return loadedEvidence{}, fmt.Errorf("%s: %w", dir, err)
	}
	defer cleanup()
	tz := in.Manifest.Timezone
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return loadedEvidence{}, err
	}
	loaded, ev, err := analysis.Load(context.Background(), *in, loc)
	if err != nil {
		return loadedEvidence{}, fmt.Errorf("load %s: %w", dir, err)
	}
	defer loaded.Close()
	var l loadedEvidence
	if ev.Traffic != nil {
		l.Requests = ev.Traffic.Total()
		l.First, l.Last = ev.Traffic.Span()
		l.Minutes = ev.Traffic.Minutes()
		for _, c := range ev.Traffic.Clusters() {
			l.Clusters = append(l.Clusters, *c)
		}
	}
	l.Health, l.Changes, l.MetricSamples = ev.Health, ev.Changes, loaded.MetricSamples
	for _, e := range ev.FPM {
		e.Time = e.Time.UTC()
		l.FPM = append(l.FPM, e)
	}
	for _, c := range loaded.Coverage {
		c.Inputs = nil
		l.Coverage = append(l.Coverage, c)
	}
	for _, n := range loaded.DataQuality {
		l.Notes = append(l.Notes, fmt.Sprintf("%s: %s", n.Severity, n.Message))
	}
	l.Incomplete = incomplete(loaded.DataQuality)
	return l, nil
}

// withoutNotes is l without the notes that contain any of drop (the notes
// that say how the lines were laid out or encoded, not what they hold).
func (l loadedEvidence) withoutNotes(drop ...string) loadedEvidence {
	l.Notes = slices.DeleteFunc(slices.Clone(l.Notes), func(n string) bool {
		for _, d := range drop {
			if strings.Contains(n, d) {
				return true
			}
		}
		return false
	})
	if len(l.Notes) == 0 {
		l.Notes = nil
	}
	return l
}

// sameLoaded fails t, naming the first field that differs, unless want and
// got loaded the same evidence.
func sameLoaded(t *testing.T, want, got loadedEvidence) {
	t.Helper()
	wv, gv := reflect.ValueOf(want), reflect.ValueOf(got)
	for i := range wv.NumField() {
		name := wv.Type().Field(i).Name
		w, g := wv.Field(i).Interface(), gv.Field(i).Interface()
		if reflect.DeepEqual(w, g) {
			continue
		}
		if wf := wv.Field(i); wf.Kind() == reflect.Slice {
			gf := gv.Field(i)
			for j := range min(wf.Len(), gf.Len()) {
				if !reflect.DeepEqual(wf.Index(j).Interface(), gf.Index(j).Interface()) {
					if wc, ok := wf.Index(j).Interface().(detect.Cluster); ok { // its addresses would fill pages
						gc := gf.Index(j).Interface().(detect.Cluster)
						t.Errorf("loaded %s differ at %d of %d: want %s with %d requests, got %s with %d", name, j, wf.Len(), wc.Key, wc.Requests, gc.Key, gc.Requests)
						break
					}
					t.Errorf("loaded %s differ at %d of %d:\nwant %+v\ngot  %+v", name, j, wf.Len(), wf.Index(j).Interface(), gf.Index(j).Interface())
					break
				}
			}
			if wf.Len() != gf.Len() {
				t.Errorf("loaded %d %s, want %d", gf.Len(), name, wf.Len())
			}
			continue
		}
		t.Errorf("loaded %s differ:\nwant %v\ngot  %v", name, w, g)
	}
}

// reportBeforeRules is the report analyze builds of the bundle dir, read
// through the CLI's inputs as loadLayout reads it, before the rules are
// proposed: for tests of what the loading, the detectors and the report say
// (impact, notes), which the rules' passes do not change. Its texts are in English and Korean.
func reportBeforeRules(t *testing.T, dir string) *report.Report {
	t.Helper()
	f := &analyzeFlags{bundle: dir}
	in, cleanup, err := f.offlineInputs(nil)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	defer cleanup()
	d, err := analysis.Detect(context.Background(), *in)
	if err != nil {
		t.Fatalf("detect %s: %v", dir, err)
	}
	defer d.Close()
	r, err := report.Build(context.Background(), d.Loaded, d.Result, d.TZ, report.LangKO)
	if err != nil {
		t.Fatalf("report %s: %v", dir, err)
	}
	return r
}
