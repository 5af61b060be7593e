package detect

import (
	"testing"

	"github.com/aftermath-forensics/aftermath/detect/request"
)

// TestJudgeAutomation: each of JudgeAutomation's tests decides where it
// should, including where the obvious answer is wrong: a declared tool that
// fetched assets is still a tool; a Chromium without client hints that
// fetched assets renders pages like a person; the same forged agent without
// assets is automated even on cheap pages; a real browser without assets is
// human on cheap pages and automated only on expensive, uncacheable ones.
// Automated is true for exactly the three verdicts of automation.
func TestJudgeAutomation(t *testing.T) {
	chrome := request.ClusterKey{UA: "Chrome/121", Lang: "en-us"}
	forged := request.ClusterKey{UA: "Chrome/121", Lang: "zh-cn", NoClientHints: true}
	tool := request.ClusterKey{UA: "python-requests"}
	for _, c := range []struct {
		name          string
		k             request.ClusterKey
		assets, tools float64
		want          Automation
		automated     bool
	}{
		{"tool fetching assets", tool, 0.4, 0.1, DeclaredTool, true},
		{"tool on cheap pages", tool, 0, 0, DeclaredTool, true},
		{"forged agent fetching assets", forged, maxAssetShare, 0.9, FetchedAssets, false},
		{"forged agent on cheap pages", forged, 0.01, 0.1, ForgedBrowser, true},
		{"browser fetching assets", chrome, 0.3, 0.9, FetchedAssets, false},
		{"browser on cheap pages", chrome, 0, minToolShare - 0.01, ReadCheapPages, false},
		{"browser on expensive pages", chrome, 0.01, minToolShare, WalkedExpensive, true},
	} {
		got := JudgeAutomation(c.k, c.assets, c.tools)
		if got != c.want {
			t.Errorf("%s: JudgeAutomation = %d, want %d", c.name, got, c.want)
		}
		if got.Automated() != c.automated {
			t.Errorf("%s: Automated() = %v, want %v", c.name, got.Automated(), c.automated)
		}
	}
}
