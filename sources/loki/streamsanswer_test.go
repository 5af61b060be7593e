package loki

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/internal/logql"
)

// TestLogPageAnswers decodes log query answers of every shape Loki (or a
// proxy in front of it) sends, checking what a page keeps and which error
// names what went wrong.
func TestLogPageAnswers(t *testing.T) {
	const stats = `"stats":{"summary":{"totalBytesProcessed":4096,"totalLinesProcessed":12,"execTime":0.01}}`
	tests := []struct {
		name    string
		answers []string // served in turn; a "CUT:" answer is cut short
		want    string   // the page as stream|ts|line entries, or
		wantErr string   // the error's text must contain this
		calls   int
		bytes   int64 // totalBytesProcessed of the page's stats; -1: none
	}{
		{
			name:    "streams with stats",
			answers: []string{`{"status":"success","data":{"resultType":"streams","result":[{"stream":{"job":"caddy","host":"a"},"values":[["2","b"],["1","a \"q\" \u00e9"]]},{"stream":{"job":"caddy","host":"b"},"values":[["1","c"]]}],` + stats + `}}`},
			want:    `{host="a", job="caddy"}|2|b {host="a", job="caddy"}|1|a "q" é {host="b", job="caddy"}|1|c`,
			calls:   1, bytes: 4096,
		},
		{
			name:    "result before resultType, no stats",
			answers: []string{`{"data":{"result":[{"values":[["5","x"]],"stream":{"job":"caddy"}}],"resultType":"streams"},"status":"success"}`},
			want:    `{job="caddy"}|5|x`,
			calls:   1, bytes: -1,
		},
		{
			name:    "structured metadata: a third element is dropped",
			answers: []string{`{"status":"success","data":{"resultType":"streams","result":[{"stream":{"job":"caddy"},"values":[["7","y",{"trace_id":"abc"}]]}]}}`},
			want:    `{job="caddy"}|7|y`,
			calls:   1, bytes: -1,
		},
		{
			name:    "empty result",
			answers: []string{`{"status":"success","data":{"resultType":"streams","result":[]}}`},
			calls:   1, bytes: -1,
		},
		{
			name:    "a matrix for a log query",
			answers: []string{`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"job":"caddy"},"values":[[1759485600,"3"]]}]}}`},
			wantErr: `want streams, Loki answered resultType "matrix"`,
			calls:   1,
		},
		{
			name:    "a matrix, result first",
			answers: []string{`{"status":"success","data":{"result":[{"metric":{},"values":[[1759485600.5,"3"]]}],"resultType":"matrix"}}`},
			wantErr: `want streams, Loki answered resultType "matrix"`,
			calls:   1,
		},
		{
			name:    "an empty vector",
			answers: []string{`{"status":"success","data":{"resultType":"vector","result":[]}}`},
			wantErr: `want streams, Loki answered resultType "vector"`,
			calls:   1,
		},
		{
			name:    "streams with a numeric timestamp",
			answers: []string{`{"status":"success","data":{"resultType":"streams","result":[{"stream":{"job":"caddy"},"values":[[1,"x"]]}]}}`},
			wantErr: "decoding streams",
			calls:   1,
		},
		{
			name:    "status error",
			answers: []string{`{"status":"error","errorType":"bad_data","error":"something odd"}`},
			wantErr: "something odd",
			calls:   1,
		},
		{
			name: "cut short, then retried: only the retry's answer",
			answers: []string{
				`CUT:{"status":"success","data":{"resultType":"streams","result":[{"stream":{"job":"caddy","leftover":"1"},"values":[["1","a"],["2","b"],["3`,
				`{"status":"success","data":{"resultType":"streams","result":[{"stream":{"job":"caddy"},"values":[["9","z"]]}]}}`,
			},
			want:  `{job="caddy"}|9|z`,
			calls: 2, bytes: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				a := tt.answers[min(calls, len(tt.answers)-1)]
				calls++
				if cut, ok := strings.CutPrefix(a, "CUT:"); ok {
					w.Header().Set("Content-Length", "100000")
					w.Write([]byte(cut))
					return
				}
				w.Write([]byte(a))
			}))
			defer srv.Close()
			c, _ := newTestClient(t, srv.URL, nil)
			streams, st, err := c.logPage(context.Background(), `{job="caddy"}`, t0, t0.Add(time.Minute), 100, nil)
			if calls != tt.calls {
				t.Errorf("%d calls, want %d", calls, tt.calls)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range streams {
				for _, v := range s.Values {
					got = append(got, logql.LabelsKey(s.Stream)+"|"+v[0]+"|"+v[1])
				}
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("page\n got %s\nwant %s", g, tt.want)
			}
			gotBytes := int64(-1)
			if st != nil {
				gotBytes = st.Summary.TotalBytesProcessed
			}
			if gotBytes != tt.bytes {
				t.Errorf("stats bytes %d, want %d (-1: no stats)", gotBytes, tt.bytes)
			}
		})
	}
}
