package detect

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/metrics/promstore"
)

// node_exporter's CPU counters as scraped at an interval: 4 CPUs, 30% busy.
func nodeCPU(from time.Time, span, every time.Duration) string {
	var b strings.Builder
	b.WriteString("# TYPE node_cpu_seconds_total counter\n")
	for t := time.Duration(0); t <= span; t += every {
		s := t.Seconds()
		for cpu := range 4 {
			ts := from.Add(t).UnixMilli()
			fmt.Fprintf(&b, "node_cpu_seconds_total{cpu=\"%d\",mode=\"idle\"} %.3f %d\n", cpu, 1000+0.7*s, ts)
			fmt.Fprintf(&b, "node_cpu_seconds_total{cpu=\"%d\",mode=\"user\"} %.3f %d\n", cpu, 500+0.3*s, ts)
		}
	}
	return b.String()
}

func TestCPUFollowsTheScrapeInterval(t *testing.T) {
	from := time.Date(2026, 10, 2, 17, 0, 0, 0, time.UTC)
	tests := []struct {
		every time.Duration
		query string // the CPU query run
	}{
		{15 * time.Second, `100 * (1 - avg(rate(node_cpu_seconds_total{mode="idle"}[1m])))`},
		// At 60 s a 1m range holds one sample: rate() is empty, which used
		// to read as "no CPU series".
		{60 * time.Second, `100 * (1 - avg(rate(node_cpu_seconds_total{mode="idle"}[240s])))`},
		{5 * time.Minute, `100 * (1 - avg(rate(node_cpu_seconds_total{mode="idle"}[1200s])))`},
	}
	for _, tt := range tests {
		t.Run(tt.every.String(), func(t *testing.T) {
			store, err := promstore.Open()
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			if _, err := store.LoadReader("node.prom", strings.NewReader(nodeCPU(from, 2*time.Hour, tt.every)), nil); err != nil {
				t.Fatal(err)
			}
			p, err := LoadPool(context.Background(), store, from.Add(30*time.Minute), from.Add(90*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if p.CPUSource != tt.query {
				t.Errorf("CPU query %s, want %s", p.CPUSource, tt.query)
			}
			if len(p.CPU) == 0 {
				t.Fatal("no CPU series")
			}
			for _, pt := range p.CPU {
				if math.Abs(pt.V-30) > 0.5 {
					t.Fatalf("CPU %.2f%% at %s, want 30%%", pt.V, pt.T)
				}
			}
		})
	}
}
