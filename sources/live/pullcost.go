package live

import (
	"fmt"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

// A pushdown is chosen only when it would pull less than pushdown.max_share
// (DefaultPushdownMaxShare) of a full pull's raw bytes. A pushdown makes Loki read the whole range
// again for every query it still has to run over it (the client families'
// counts, the per-minute status counts), which a full pull does not: Loki's
// own statistics (totalBytesProcessed) count every line of the selector's
// streams in a query's range, whatever its line filters and parsers. So it
// always costs Loki more, and is worth it only where it saves most of the
// pulled bytes; a range whose minutes mostly stand out is pulled whole.

// pullEstimate is the cost model: what a full pull and a pushdown would
// still cost, from the per-minute counts and bytes (bytes_over_time, no
// parser) Loki has already given.
func pullEstimate(rows []Minute, minuteBytes []float64, rangeQueries int, maxShare float64) bundle.PullEstimate {
	var e bundle.PullEstimate
	for i, b := range minuteBytes {
		e.FullBytes += int64(b)
		if rows[i].Pulled {
			e.PushdownBytes += int64(b)
		}
	}
	// A full pull reads its range once and its completeness count reads it
	// once more (loki.Client.Pull checks each sub-range's lines against
	// Loki's count); the pushdown's pulls are checked against the
	// per-minute counts it has (loki.Counted), and it adds its queries over
	// the whole range.
	e.FullLokiBytes = 2 * e.FullBytes
	e.PushdownLokiBytes = int64(rangeQueries)*e.FullBytes + e.PushdownBytes
	e.Chosen = bundle.ChosenPushdown
	e.MaxShare = maxShare
	if maxShare < 1 && float64(e.PushdownBytes) >= maxShare*float64(e.FullBytes) {
		e.Chosen = bundle.ChosenFull
	}
	return e
}

// describeEstimate is the sentence that states both estimates and the
// choice.
func describeEstimate(e bundle.PullEstimate) string {
	share := 0.0
	if e.FullBytes > 0 {
		share = 100 * float64(e.PushdownBytes) / float64(e.FullBytes)
	}
	return fmt.Sprintf("cost model: a full pull would pull %d bytes (Loki reading about %d), a pushdown %d bytes of its minutes (%.1f%%, before the client families; Loki reading about %d more); chosen: %s, as a pushdown is chosen only below %.0f%% of the full pull's bytes (pushdown.max_share)",
		e.FullBytes, e.FullLokiBytes, e.PushdownBytes, share, e.PushdownLokiBytes, e.Chosen, 100*e.MaxShare)
}
