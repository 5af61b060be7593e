package detect

import (
	"regexp"
	"strconv"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// minRateWindow is the range a rate() takes when the scrape interval is 15 s
// or unknown: Prometheus' default scrape interval, four times over.
const minRateWindow = time.Minute

// scrapeIntervals is what a Querier may know of the data it queries: the
// store of a bundle measures each metric's scrape interval as it loads.
type scrapeIntervals interface {
	ScrapeInterval(name string) time.Duration
}

// rateRE finds the metric and the range of a rate() or increase().
var rateRE = regexp.MustCompile(`((?:rate|increase)\(([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?)\[1m\]`)

// RateQuery gives each rate() in query a range that holds at least four
// samples at the scrape interval seen in the data (node_exporter is often
// scraped every 60 s: a 1m range then holds one sample, and rate() returns
// nothing, which would read as "no CPU series"). With an interval of 15 s or
// less, or one q cannot tell, the range stays 1m.
func RateQuery(q metrics.Querier, query string) string {
	si, ok := q.(scrapeIntervals)
	if !ok {
		return query
	}
	return rateRE.ReplaceAllStringFunc(query, func(m string) string {
		sm := rateRE.FindStringSubmatch(m)
		w := max(minRateWindow, 4*si.ScrapeInterval(sm[2]))
		if w == minRateWindow {
			return m
		}
		return sm[1] + "[" + strconv.Itoa(int(w.Seconds())) + "s]"
	})
}
