package lokitest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// indexStats answers GET /loki/api/v1/index/stats as Loki's HTTP API
// documents it: the streams, chunks, entries and bytes the matchers of query
// resolve to in [start, end], read from the index, not the chunks, and
// written bare ({"streams": N, "chunks": N, "entries": N, "bytes": N}, no
// status envelope). The fake's index is exact (one chunk per stream); a real
// Loki's is an approximation that leaves out what the ingesters still hold.
// It reads no line, so it adds nothing to BytesProcessed.
func (f *Loki) indexStats(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	start, end, ok := f.indexRange(w, q)
	if !ok {
		return
	}
	expr, err := ParseQuery(q.Get("query"))
	if err != nil {
		f.Fail(w, 400, err.Error())
		return
	}
	if expr.fn != "" || len(expr.stages) > 0 {
		f.Fail(w, 400, fmt.Sprintf("invalid query %q: only matchers", q.Get("query")))
		return
	}
	var streams, entries, bytes int64
	f.mu.Lock()
	f.sortLocked()
	for _, s := range f.streams {
		if !expr.Matches(s.labels) {
			continue
		}
		win := s.window(start, end+1)
		if len(win) == 0 {
			continue
		}
		streams++
		entries += int64(len(win))
		for _, e := range win {
			bytes += int64(len(e.Line))
		}
	}
	f.mu.Unlock()
	b, err := json.Marshal(map[string]int64{"streams": streams, "chunks": streams, "entries": entries, "bytes": bytes})
	if err != nil {
		f.t.Errorf("fake loki: %v", err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	n, _ := w.Write(b)
	f.count("index_stats", n)
}
