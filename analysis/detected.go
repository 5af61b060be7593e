package analysis

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	_ "github.com/aftermath-forensics/aftermath/detect/configchange" // registers config_change among detect.Detectors()
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/ingest"
	"github.com/aftermath-forensics/aftermath/sources/live"
)

// Detected is the half of the pipeline every analysis shares: the evidence
// loaded and the detectors run on it.
type Detected struct {
	// TZ is the time zone's name: the manifest's timezone, else "UTC"; Loc
	// is that zone.
	TZ  string
	Loc *time.Location
	// Loaded is what was read; Close releases it.
	Loaded *evidence.Loaded
	// Evidence is the detectors' view of Loaded; Result what they found.
	Evidence *detect.Evidence
	Result   *detect.Result
}

// Close releases what d loaded; a nil d holds nothing.
func (d *Detected) Close() {
	if d != nil {
		d.Loaded.Close()
	}
}

// Load reads in in loc, aggregated as the detectors read it, and returns it
// with the detectors' view of it (detect.EvidenceOf). The caller closes the
// Loaded.
func Load(ctx context.Context, in evidence.Inputs, loc *time.Location) (*evidence.Loaded, *detect.Evidence, error) {
	loaded, err := ingest.Load(ctx, in, loc, detect.NewAggregate)
	if err != nil {
		return nil, nil, err
	}
	return loaded, detect.EvidenceOf(loaded), nil
}

// Detect loads in (keeping the requests for the rules, which read them
// again) and runs every detector on it. The caller closes the result.
func Detect(ctx context.Context, in evidence.Inputs) (*Detected, error) {
	// The rules read the requests again: kept in a spill, they are not parsed twice.
	in.KeepRequests = true
	return detectInputs(ctx, in)
}

// runDetectors is detect.Run; a test counts the runs through it.
var runDetectors = detect.Run

// UnusableEvidence lists the sources given but unusable
// (ingest.Loaded.NoEvidence), one message each: a source given but unusable
// is not a quiet site, and no detector runs.
type UnusableEvidence []string

func (u UnusableEvidence) Error() string { return strings.Join(u, "\n") }

// detectInputs loads in in the bundle's time zone, adds the notes a live
// bundle's manifest carries, and runs every detector. A source given but
// unusable is an UnusableEvidence. The caller closes the result.
func detectInputs(ctx context.Context, in evidence.Inputs) (*Detected, error) {
	tz := in.Manifest.Timezone
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", tz, err)
	}
	loaded, ev, err := Load(ctx, in, loc)
	if err != nil {
		return nil, err
	}
	if len(loaded.NoEvidence) > 0 {
		loaded.Close()
		return nil, UnusableEvidence(loaded.NoEvidence)
	}
	// A bundle fetched live says in its manifest which queries were partial.
	loaded.DataQuality = append(loaded.DataQuality, live.ManifestNotes(in.Manifest)...)
	stage(in, "detecting")
	res, err := runDetectors(ctx, ev, detect.Detectors())
	if err != nil {
		loaded.Close()
		return nil, err
	}
	return &Detected{TZ: tz, Loc: loc, Loaded: loaded, Evidence: ev, Result: res}, nil
}

// stage tells in's progress what the pipeline is doing now.
func stage(in evidence.Inputs, name string) {
	if in.Progress != nil {
		in.Progress.Stage(name, -1)
	}
}
