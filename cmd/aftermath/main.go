// Command aftermath analyzes an outage of a PHP site behind Caddy: it reads access
// logs, php-fpm metrics, CPU series and configuration changes (live or from an
// evidence bundle), and writes a postmortem and rate-limit rules.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/aftermath-forensics/aftermath/cmd/internal/initpages"

	_ "time/tzdata" // report times in the incident's zone even on machines without zoneinfo
)

// Exit codes of the CLI contract (design.md).
const (
	exitOK         = 0
	exitIncomplete = 1 // done, but evidence incomplete (or, for scan, something is anomalous)
	exitUsage      = 2 // usage or input error
)

// exitError carries an exit code through cobra's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "aftermath",
		Short:         "Postmortems and rate-limit rules for PHP sites behind Caddy, from logs and metrics",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(),
	}
	root.SetVersionTemplate("aftermath {{.Version}}\n")
	root.AddCommand(newAnalyzeCmd(), newDemoCmd(), newFetchCmd(), newReplayCmd(), newRulesCmd(), newScanCmd(), newSimulateCmd(), newVersionCmd())
	registerCompletions(root)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the commit and date it was built from, and its Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "aftermath", versionString())
			return nil
		},
	}
}

func main() {
	// The initialisers of the ~1,300 packages linked in (Caddy's among them)
	// left some 48 MiB of the binary resident that the run never touches
	// again: give it back (cmd/internal/initpages).
	initpages.Release()
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int { return runTo(args, nil, nil) }

// runTo is run writing to stdout and stderr instead of the process's (nil
// keeps it): tests keep what a command prints and show it only when they fail.
func runTo(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	if stdout != nil {
		root.SetOut(stdout)
	}
	if stderr != nil {
		root.SetErr(stderr)
	}
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(root.ErrOrStderr(), "aftermath:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	// cobra's own flag and argument errors are usage errors too.
	return exitUsage
}
