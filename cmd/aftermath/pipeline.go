package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report"
)

// analyzeInputs runs the pipeline sources -> detect -> report on in.
func analyzeInputs(ctx context.Context, in detect.Inputs) (*report.Report, error) {
	tz := in.Manifest.Timezone
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", tz, err)
	}
	loaded, err := detect.Load(ctx, in, loc)
	if err != nil {
		return nil, err
	}
	defer loaded.Close()
	res, err := detect.Run(ctx, loaded.Evidence, detect.Detectors())
	if err != nil {
		return nil, err
	}
	return report.Build(ctx, loaded, res, tz)
}
