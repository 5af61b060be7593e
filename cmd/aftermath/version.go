package main

import (
	"runtime/debug"
	"strings"

	"github.com/aftermath-forensics/aftermath/report"
)

// Set by the linker (the Makefile: -X main.version=... -X main.commit=...
// -X main.buildDate=...). They win over the Go toolchain's build info, which
// has no VCS revision when GOFLAGS carries -buildvcs=false (CI systems and
// distribution builds often set it) or when the source is not a checkout.
var (
	version   = "" // git describe --always --dirty
	commit    = "" // git rev-parse HEAD
	buildDate = "" // RFC3339, UTC
)

// buildInfo says which build this binary is: the linker's stamps first, then
// what the Go toolchain recorded (runtime/debug.ReadBuildInfo): the module
// version ("v0.4.1" from go install, "(devel)" from a checkout), the VCS
// revision, its time and whether the tree had uncommitted changes.
func buildInfo() report.Generator {
	g, _ := buildInfoAndCommitTime()
	return g
}

// buildInfoAndCommitTime is buildInfo and, from the toolchain's build info,
// the commit's time ("" when unknown).
func buildInfoAndCommitTime() (g report.Generator, commitTime string) {
	g = report.Generator{Name: "aftermath", Version: version, Commit: commit, BuildDate: buildDate}
	// git describe marks a dirty tree itself; the build info says so separately.
	g.Modified = strings.HasSuffix(version, "-dirty")
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fillVersion(g), ""
	}
	g.GoVersion = bi.GoVersion
	if g.Version == "" {
		g.Version = bi.Main.Version
	}
	if g.Commit == "" {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				g.Commit = s.Value
			case "vcs.time":
				commitTime = s.Value
			case "vcs.modified":
				g.Modified = s.Value == "true"
			}
		}
	}
	return fillVersion(g), commitTime
}

func fillVersion(g report.Generator) report.Generator {
	if g.Version == "" {
		g.Version = "(devel)"
	}
	return g
}

// versionString is buildInfo in one line: "v0.4.1-3-gabc1234 (commit
// abc1234def56, built 2026-12-05T12:00:00Z, go1.26.8)".
func versionString() string {
	g, commitTime := buildInfoAndCommitTime()
	var parts []string
	if g.Commit != "" {
		parts = append(parts, "commit "+g.Commit)
	} else {
		parts = append(parts, "commit unknown (built without VCS information: build with `make build`, which stamps it)")
	}
	if g.Modified && !strings.HasSuffix(g.Version, "-dirty") {
		parts = append(parts, "with uncommitted changes")
	}
	if commitTime != "" {
		parts = append(parts, "committed "+commitTime)
	}
	if g.BuildDate != "" {
		parts = append(parts, "built "+g.BuildDate)
	}
	if g.GoVersion != "" {
		parts = append(parts, g.GoVersion)
	}
	return g.Version + " (" + strings.Join(parts, ", ") + ")"
}
