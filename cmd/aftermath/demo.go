package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

// sampleBundle is the crawler-backlog incident as `aftermath simulate` writes it
// (regenerate with `make sample`). Its files are compressed one by one inside the
// tar, so the tar itself is stored as is.
//
//go:embed sample/crawler-backlog.tar
var sampleBundle []byte

func newDemoCmd() *cobra.Command {
	var out, lang string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Analyze the sample incident embedded in the binary",
		Long: "Demo unpacks the embedded crawler-backlog incident (a simulated replay of the\n" +
			"reference postmortem: a distributed crawler and a listen backlog raised the\n" +
			"evening before) and analyzes it like `analyze --bundle`.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := os.MkdirTemp("", "aftermath-demo-bundle-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			if err := bundle.Untar(bytes.NewReader(sampleBundle), dir); err != nil {
				return fmt.Errorf("demo: unpacking the sample bundle: %w", err)
			}
			b, err := bundle.Open(dir)
			if err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			in := detect.InputsFromBundle(b)
			fmt.Fprintf(cmd.OutOrStdout(), "analyzing the embedded sample incident (%s)\n", b.Manifest.Generator)
			return analyzeAndWrite(cmd, &in, out, report.Formats, lang)
		},
	}
	cmd.Flags().StringVar(&out, "out", "aftermath-demo", "output directory")
	cmd.Flags().StringVar(&lang, "lang", "en", "language of the postmortem: en or ko")
	return cmd
}
