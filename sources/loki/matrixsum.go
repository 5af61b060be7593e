package loki

import (
	"sort"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/internal/logql"
)

// matrixSum adds up the answers of the parts a refused metric query was
// split into (by streams for its bytes, by grouping values for its series):
// the parts never overlap, so a series' value at a step is the sum of the
// parts' values there.
type matrixSum map[string]*summedSeries

type summedSeries struct {
	metric map[string]string
	at     map[time.Time]float64
}

// add sums one part's answer in.
func (s matrixSum) add(res []matrixResult) {
	for _, r := range res {
		k := logql.LabelsKey(r.Metric)
		ss := s[k]
		if ss == nil {
			ss = &summedSeries{metric: r.Metric, at: map[time.Time]float64{}}
			s[k] = ss
		}
		for _, v := range r.Values {
			ss.at[v.T] += v.V
		}
	}
}

// results is the summed matrix, each series' steps in time order.
func (s matrixSum) results() []matrixResult {
	out := make([]matrixResult, 0, len(s))
	for _, ss := range s {
		r := matrixResult{Metric: ss.metric}
		for t, v := range ss.at {
			r.Values = append(r.Values, samplePair{T: t, V: v})
		}
		sort.Slice(r.Values, func(i, j int) bool { return r.Values[i].T.Before(r.Values[j].T) })
		out = append(out, r)
	}
	return out
}
