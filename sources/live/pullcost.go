package live

import (
	"fmt"
	"math"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

// A pushdown is chosen only when it would pull less than pushdown.max_share
// (DefaultPushdownMaxShare) of a full pull's raw bytes. A pushdown makes Loki
// read the whole range again for every query it still has to run over it
// (the counts per client family and status, PHP's seconds), which a full
// pull does not: Loki's own statistics (totalBytesProcessed) count every
// line of the selector's streams in a query's range, whatever its line
// filters and parsers. So it always costs Loki more, and is worth it only
// where it saves most of the pulled bytes; a range whose minutes mostly
// stand out is pulled whole.
//
// The model runs first on the cheapest counts Loki can give: every line per
// minute (count_over_time, no parser), bytes per line from Loki's index
// (index/stats, which reads no line), and then the failed lines per minute
// (a line filter on the raw JSON, failedLineFilter, no parser either). Those
// say which minutes stand out by their volume or their failed lines, exactly
// as the plan will (flagMinutes on the same counts), but not which client
// families rose: that needs | json. The pushdown's estimate is then a lower
// bound, and a full pull chosen on it is chosen for sure, with no | json
// query run at all; a pushdown chosen on it is checked once more when the
// counts per family and status are in (the estimate stated is that one).

// pullEstimate is the cost model: what a full pull and a pushdown would
// still cost, from the per-minute rows (flagged as the pushdown would pull
// them), the bytes per minute, the client families' lines per minute in the
// minutes not pulled whole (nil when not known) and the lines per minute,
// and how many more queries over the whole range the pushdown needs.
func pullEstimate(rows []Minute, minuteBytes, familyPerMinute []float64, rangeQueries int, maxShare float64) bundle.PullEstimate {
	e := bundle.PullEstimate{Basis: bundle.EstimateFromLineCounts}
	if familyPerMinute != nil {
		e.Basis = bundle.EstimateFromFamilies
	}
	// Loki reads every line of a range it is asked for, whatever the
	// filters: the families' spans (familySpans) make it read the minutes
	// they cross whole, not only the families' lines.
	var full, pushdown, lokiRead float64
	for i, b := range minuteBytes {
		full += b
		switch {
		case rows[i].Pulled:
			pushdown += b
			lokiRead += b
		case familyPerMinute != nil && familyPerMinute[i] > 0 && rows[i].Lines > 0:
			pushdown += b * familyPerMinute[i] / float64(rows[i].Lines)
			lokiRead += b
		}
	}
	e.FullBytes, e.PushdownBytes = int64(math.Round(full)), int64(math.Round(pushdown))
	// The counts per minute are made before either: a full pull is checked
	// against them (loki.Counted) and reads its range once; the pushdown's
	// pulls are checked against them too, and it adds its queries over the
	// whole range.
	e.FullLokiBytes = e.FullBytes
	e.PushdownLokiBytes = int64(rangeQueries)*e.FullBytes + int64(math.Round(lokiRead))
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
	basis := "from the line counts per minute alone, every line's and the failed lines', no parser, before any count per client family (at least this much)"
	if e.Basis == bundle.EstimateFromFamilies {
		basis = "with the client families' lines and the minutes whose failed lines stand out"
		if e.LineCountsPushdownBytes > 0 && e.FullBytes > 0 {
			basis += fmt.Sprintf("; the line counts alone said %.1f%%", 100*float64(e.LineCountsPushdownBytes)/float64(e.FullBytes))
		}
	}
	return fmt.Sprintf("cost model (bytes from %s): a full pull would pull %d bytes (Loki reading about %d), a pushdown %d bytes (%.1f%%, %s; Loki reading about %d more); chosen: %s, as a pushdown is chosen only below %.0f%% of the full pull's bytes (pushdown.max_share)",
		e.BytesFrom, e.FullBytes, e.FullLokiBytes, e.PushdownBytes, share, basis, e.PushdownLokiBytes, e.Chosen, 100*e.MaxShare)
}
