package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// demoIncident is the sample incident: the crawler-backlog scenario as
// `aftermath simulate --scenario crawler-backlog --seed 1` writes it (the
// same logs, gzipped at the fast level: the bundle is read once, and the best
// level was most of the simulation's CPU). It is simulated at each run rather
// than shipped: the seed makes every run write the same bundle, in a few
// seconds, and the binary and the repository do not carry 14 MB of generated
// logs.
var demoIncident = simulate.Options{Scenario: "crawler-backlog", Seed: 1, Scale: 1, BaselineHours: 24, FastGzip: true}

// demoWorkDir is where demo simulates the sample incident (into its bundle/
// subdirectory) and leaves it; empty, the default, demo simulates into a
// temporary directory it removes. The tests set it so that the bundle the
// demo analyzed is the one they read, not a second simulation of it.
var demoWorkDir string

// simulateDemo writes the sample incident's bundle into dir/bundle and opens
// it.
func simulateDemo(ctx context.Context, dir string) (*bundle.Bundle, error) {
	o := demoIncident
	o.Out = filepath.Join(dir, "bundle")
	if _, err := simulate.Run(ctx, o); err != nil {
		return nil, fmt.Errorf("demo: simulating the sample incident: %w", err)
	}
	b, err := bundle.Open(o.Out)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	return b, nil
}

func newDemoCmd() *cobra.Command {
	var out, lang string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Simulate the sample incident and analyze it",
		Long: "Demo simulates the crawler-backlog incident (seed 1, the same every run: a\n" +
			"replay of the reference postmortem, a distributed crawler and a listen backlog\n" +
			"raised the evening before) and analyzes it like `analyze --bundle`.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := demoWorkDir
			if dir == "" {
				tmp, err := os.MkdirTemp("", "aftermath-demo-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(tmp)
				dir = tmp
			}
			fmt.Fprintf(cmd.OutOrStdout(), "simulating the sample incident (%s, seed %d)\n", demoIncident.Scenario, demoIncident.Seed)
			b, err := simulateDemo(cmd.Context(), dir)
			if err != nil {
				return err
			}
			in := evidence.FromBundle(b)
			fmt.Fprintf(cmd.OutOrStdout(), "analyzing the sample incident (%s)\n", b.Manifest.Generator)
			return analyzeAndWrite(cmd, &in, nil, out, report.Formats, lang)
		},
	}
	cmd.Flags().StringVar(&out, "out", "aftermath-demo", "output directory")
	cmd.Flags().StringVar(&lang, "lang", "en", "language of the postmortem: en or ko")
	return cmd
}
