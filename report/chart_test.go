package report

import (
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect"
)

// The goodput chart's key states upstream_errors' lowest goodput, the number
// the text states, not one of its own from the minutes: here the fact
// (7) is not the minutes' lowest, and the key must follow the fact. Without
// the fact (no minute in the stretch) the key states no lowest at all.
func TestGoodputChartKeyIsTheFact(t *testing.T) {
	for _, tt := range []struct {
		name string
		min  float64 // goodput_min_per_min; < 0: not stated
		want string
	}{
		{"stated", 7, "lowest while failing 7<"},
		{"not stated", -1, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := referenceReport(t)
			f := detect.First(r.Findings, detect.KindUpstreamErrors)
			facts := detect.FactMap(f.Facts)
			lowestOfMinutes := facts["goodput_min_per_min"]
			if lowestOfMinutes == 7 {
				t.Fatal("the fixture's lowest goodput is 7: the test could not tell the fact from the minutes")
			}
			delete(facts, "goodput_min_per_min")
			if tt.min >= 0 {
				facts["goodput_min_per_min"] = tt.min
			}
			f.Facts = detect.MustParseFacts(detect.KindUpstreamErrors, facts)
			v, err := newView(r, LangEN)
			if err != nil {
				t.Fatal(err)
			}
			var key string
			for _, c := range charts(r, v, newPrinter(LangEN, mustZone("Asia/Seoul"), r.Impact.Start)) {
				if c.ID == "chart-goodput" {
					key = string(c.SVG)
				}
			}
			if key == "" {
				t.Fatal("no goodput chart")
			}
			got := strings.Contains(key, "lowest while failing")
			if tt.want == "" && got {
				t.Errorf("the key states a lowest goodput upstream_errors does not state")
			}
			if tt.want != "" && !strings.Contains(key, tt.want) {
				t.Errorf("the key lacks %q (the minutes' lowest is %v)", tt.want, lowestOfMinutes)
			}
		})
	}
}
