package detect

import "github.com/aftermath-forensics/aftermath/detect/request"

// Automation is why JudgeAutomation called a client fingerprint automated or
// human: which of its tests decided. The crawler detector and the scan each
// say it in their own words (their catalogs), from this one decision; neither
// tests the user agent, the client hints or the shares again.
type Automation uint8

const (
	// DeclaredTool: its user agent is no browser's (a declared bot or tool),
	// automated whatever it fetched.
	DeclaredTool Automation = iota + 1
	// FetchedAssets: a browser that fetched assets (maxAssetShare of its
	// requests or more), as people rendering pages do; human, even when its
	// client hints are missing.
	FetchedAssets
	// ForgedBrowser: a Chromium user agent without client hints that fetched
	// no assets: automated, however cheap its pages.
	ForgedBrowser
	// ReadCheapPages: a browser that fetched no assets but read cheap or
	// cached pages (under minToolShare of its page requests went to
	// expensive, uncacheable routes), as people do; human.
	ReadCheapPages
	// WalkedExpensive: a browser that fetched no assets and walked
	// expensive, uncacheable routes (minToolShare of its page requests or
	// more, by measured cost): automated.
	WalkedExpensive
)

// Automated reports whether a is a verdict of automation.
func (a Automation) Automated() bool {
	return a == DeclaredTool || a == ForgedBrowser || a == WalkedExpensive
}

// JudgeAutomation decides whether a client fingerprint is automated from how
// it reads, and says which test decided: a declared bot or tool is automated;
// browsers fetch assets after pages (assetShare of its requests), and people
// read cheap or cached pages rather than expensive uncacheable ones
// (toolShare of its page requests, by measured cost) unless the agent is
// forged (a Chromium without client hints).
// The crawler detector and the scan both judge by it.
func JudgeAutomation(k request.ClusterKey, assetShare, toolShare float64) Automation {
	switch {
	case !request.IsBrowser(k.UA):
		return DeclaredTool
	case assetShare >= maxAssetShare:
		return FetchedAssets
	case k.NoClientHints:
		return ForgedBrowser
	case toolShare < minToolShare:
		return ReadCheapPages
	}
	return WalkedExpensive
}
