package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

func newSimulateCmd() *cobra.Command {
	var o simulate.Options
	cmd := &cobra.Command{
		Use:   "simulate --scenario NAME --out BUNDLE",
		Short: "Write a simulated incident as an evidence bundle",
		Long: "Simulate runs a discrete-event model of Caddy in front of php-fpm and writes an\n" +
			"evidence bundle with a ground-truth file beside the evidence. Scenarios:\n\n" + scenarioList(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Scenario == "" || o.Out == "" {
				return usageErrorf("--scenario and --out are required; scenarios:\n%s", scenarioList())
			}
			if !slices.Contains(simulate.Scenarios(), o.Scenario) {
				return usageErrorf("unknown scenario %q; scenarios:\n%s", o.Scenario, scenarioList())
			}
			if o.Scale <= 0 {
				return usageErrorf("--scale must be positive, got %g", o.Scale)
			}
			sum, err := simulate.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			printSimulation(cmd.OutOrStdout(), sum)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Scenario, "scenario", "", "scenario name")
	fl.StringVar(&o.Out, "out", "", "bundle directory to write")
	fl.Int64Var(&o.Seed, "seed", 1, "random seed: the same seed writes the same bundle")
	fl.Float64Var(&o.Scale, "scale", 1, "traffic multiplier (for benchmarks)")
	fl.Float64Var(&o.BaselineHours, "baseline-hours", 24, "hours of ordinary traffic before the incident")
	return cmd
}

func scenarioList() string {
	var b strings.Builder
	for _, s := range simulate.Scenarios() {
		fmt.Fprintf(&b, "  %-28s %s\n", s, simulate.Describe(s))
	}
	return b.String()
}

func printSimulation(w io.Writer, s simulate.Summary) {
	codes := make([]int, 0, len(s.WindowStatus))
	for c := range s.WindowStatus {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d: %s", c, detect.FormatInt(s.WindowStatus[c]))
	}
	fmt.Fprintf(w, "%s (seed %d): %s access-log lines, %.1f MB on disk, simulated in %s\n",
		s.Scenario, s.Seed, detect.FormatInt(s.Lines), float64(s.TotalBytes())/1e6, s.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "statuses in the incident window: %s\n", strings.Join(parts, ", "))
	fmt.Fprintf(w, "wrote %s (ground truth in truth.json: no detector reads it)\n", s.Out)
}
