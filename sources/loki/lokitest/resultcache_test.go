package lokitest

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestResultsCacheAnswersAsAnEvaluation: a metric query answered from the
// results cache - by a second fake that holds the same lines, pushed in
// another order - is the evaluation's answer byte for byte and counts the
// same bytes processed; a line pushed after it (not a copy of one stored,
// which Loki keeps once) changes the answer; and max_query_series still
// refuses a cached answer with too many series.
func TestResultsCacheAnswersAsAnEvaluation(t *testing.T) {
	base := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	type pushed struct {
		labels map[string]string
		ts     time.Time
		line   string
	}
	var lines []pushed
	for i := range 40 {
		status := []string{"200", "503"}[i%2]
		lines = append(lines, pushed{map[string]string{"job": "caddy", "status": status}, base.Add(time.Duration(i) * 7 * time.Second), `{"status":` + status + `,"uri":"/w/index.php"}`})
	}
	first, second := New(t), New(t)
	for i := range lines {
		a, b := lines[i], lines[len(lines)-1-i]
		first.Push(a.labels, a.ts, a.line)
		second.Push(b.labels, b.ts, b.line)
	}
	query := `sum by (status) (count_over_time({job="caddy"} |= "index.php" [1m]))`
	ask := func(f *Loki) (int, string) {
		t.Helper()
		v := url.Values{"query": {query}, "start": {base.Format(time.RFC3339)}, "end": {base.Add(5 * time.Minute).Format(time.RFC3339)}, "step": {"60"}}
		resp, err := http.Get(f.URL() + "/loki/api/v1/query_range?" + v.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	code, evaluated := ask(first)
	if code != http.StatusOK || !strings.Contains(evaluated, `"status":"503"`) {
		t.Fatalf("first fake: %d %s", code, evaluated)
	}
	second.Push(lines[0].labels, lines[0].ts, lines[0].line) // a copy: kept once
	if _, cached := ask(second); cached != evaluated {
		t.Errorf("the same lines answered\n%s\nand\n%s", cached, evaluated)
	}
	if a, b := first.BytesProcessed(), second.BytesProcessed(); a != b || a == 0 {
		t.Errorf("bytes processed %d evaluated, %d from the cache", a, b)
	}
	second.Push(map[string]string{"job": "caddy", "status": "503"}, base.Add(10*time.Second), `{"status":503,"uri":"/w/index.php?title=Main"}`)
	if _, after := ask(second); after == evaluated {
		t.Errorf("a line pushed after the query did not change its answer: %s", after)
	}
	first.SetMaxQuerySeries(1)
	if code, body := ask(first); code != http.StatusBadRequest || !strings.Contains(body, "maximum number of series (1) reached") {
		t.Errorf("max_query_series 1 on a cached answer of 2 series: %d %s", code, body)
	}
}
