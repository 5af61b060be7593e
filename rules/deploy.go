package rules

import (
	"fmt"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/rules/rule"
)

// What deploying the block takes is stated once, in package rule (the
// report prints it without linking Caddy); these name it where rules uses it.
const (
	Module       = rule.Module
	BuildCommand = rule.BuildCommand
	OrderOption  = rule.OrderOption
)

// deployHeader is the comment rules.caddy opens with: what the block needs,
// where it goes, how to check it, and what it would have refused. It holds
// no text from the logs: zone names are [a-z0-9_] (zoneNameOK) and every
// other value is a number or a time.
func deployHeader(p *Proposal, from, to time.Time) string {
	var b strings.Builder
	line := func(format string, args ...any) {
		s := fmt.Sprintf(format, args...)
		if s == "" {
			b.WriteString("#\n")
			return
		}
		b.WriteString("# " + s + "\n")
	}
	line("Rate limits proposed by aftermath for the incident of %s to %s (UTC).", from.UTC().Format("2006-01-02 15:04"), to.UTC().Format("2006-01-02 15:04"))
	line("")
	for _, l := range rule.DeploySteps() {
		line("%s", l)
	}
	line("")
	line("What it would have refused, replaying the recorded requests (backtest):")
	for _, r := range p.Rules {
		line("  zone %s (%d requests per %s, %s):", r.Name, r.Events, r.Window, keyText(r.Key))
		backtestLines(line, r.Backtest)
	}
	if len(p.Rules) > 1 && p.Backtest != nil {
		line("  all zones together:")
		backtestLines(line, *p.Backtest)
	}
	line("Each zone's conditions, sizing and arithmetic: report.json (rules[].why).")
	return b.String()
}

func keyText(key string) string {
	if key == "{client_ip}" {
		return "one bucket per client address"
	}
	return "one bucket for all clients"
}

// backtestLines prints one backtest as header lines.
func backtestLines(line func(string, ...any), bt Backtest) {
	first := "never"
	if !bt.FirstRefusal.IsZero() {
		first = "from " + bt.FirstRefusal.UTC().Format("15:04:05") + " UTC"
	}
	line("    crawler: %s of %s requests refused (%s), %s", fmtInt(bt.CrawlerRefused), fmtInt(bt.CrawlerRequests), pct(bt.CrawlerRefusedShare), first)
	addresses := "addresses"
	if bt.FingerprintReadersRefused == 1 {
		addresses = "address"
	}
	line("    readers who share the crawler's fingerprint: %s of %s requests refused (%s %s)",
		fmtInt(bt.FingerprintReaderRefused), fmtInt(bt.FingerprintReaderRequests), fmtInt(bt.FingerprintReadersRefused), addresses)
	line("    other logged-out requests (the readers' logged-out ones included): %s of %s refused (%s)",
		fmtInt(bt.OtherLoggedOutRefused), fmtInt(bt.OtherLoggedOutRequests), pct(bt.OtherLoggedOutRefusedShare))
	line("    logged-in requests: %s of %s refused", fmtInt(bt.LoggedInRefused), fmtInt(bt.LoggedInRequests))
	line("    ordinary requests before the incident (baseline): %s of %s refused", fmtInt(bt.BaselineRefused), fmtInt(bt.BaselineRequests))
}

func pct(share float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", 100*share), "0"), ".") + "%"
}
