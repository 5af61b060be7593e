package scan

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

func TestZZExplore(t *testing.T) {
	dir := os.Getenv("WEEK")
	if dir == "" {
		t.Skip()
	}
	b, err := bundle.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	loc, _ := time.LoadLocation("Asia/Seoul")
	start := b.Manifest.Window.From
	var nows []time.Time
	for now := start.Add(time.Hour); !now.After(b.Manifest.Window.To); now = now.Add(time.Hour) {
		nows = append(nows, now)
	}
	t0 := time.Now()
	set, err := Load(context.Background(), detect.InputsFromBundle(b), Config{Loc: loc}, nows...)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	t.Logf("load %s", time.Since(t0))
	t0 = time.Now()
	for _, now := range nows {
		res, err := set.Scan(context.Background(), now)
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%s req=%d", now.In(loc).Format("Mon 01-02 15:04"), res.Recent.Requests)
		for _, a := range res.Anomalies {
			line += fmt.Sprintf(" | %s %s [%s] %.0f/%.0f s=%.1f f=%v", a.Severity, a.Kind, a.Key, a.Observed, a.Baseline, a.Score, a.Findings)
		}
		fmt.Println(line)
	}
	t.Logf("scans %s", time.Since(t0))
}
