package report

import (
	"io"
	"testing"
)

// BenchmarkPrintSummary prints the reference incident's terminal summary:
// its five tables, the notes and the paths written.
func BenchmarkPrintSummary(b *testing.B) {
	r := referenceReport(b)
	b.ReportAllocs()
	for b.Loop() {
		PrintSummary(io.Discard, r, LangEN, "postmortem.md")
	}
}
