package rules

import (
	"fmt"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/rules/rule"
)

// What deploying the block takes is stated once, in package rule (the
// report prints it without linking Caddy); these name it where rules uses it.
const (
	Module       = rule.Module
	BuildCommand = rule.BuildCommand
	OrderOption  = rule.OrderOption
)

// deployHeader is the comment rules.caddy opens with, as lines said from
// the catalog (header.* in prose/): what the block needs, where it goes, how
// to check it, and what it would have refused. It holds no text from the
// logs: zone names are [a-z0-9_] (zoneNameOK) and every other value is a
// number or a time, printed here so that every language shows the same
// digits.
func deployHeader(p *Proposal, from, to time.Time) []prose.Text {
	var lines []prose.Text
	say := func(t prose.Text) { lines = append(lines, t) }
	say(Messages.Say("header.title", struct{ From, To string }{from.UTC().Format("2006-01-02 15:04"), to.UTC().Format("2006-01-02 15:04")}))
	say(prose.Text{})
	say(prose.Plainly(stepsMarker))
	say(prose.Text{})
	say(Messages.Say("header.backtest", nil))
	for _, r := range p.Rules {
		say(Messages.Say("header.zone", struct {
			Name, Window string
			Events       int
			PerClient    bool
		}{r.Name, r.Window, r.Events, r.Key == "{client_ip}"}))
		lines = append(lines, backtestLines(r.Backtest)...)
	}
	if len(p.Rules) > 1 && p.Backtest != nil {
		say(Messages.Say("header.all_zones", nil))
		lines = append(lines, backtestLines(*p.Backtest)...)
	}
	say(Messages.Say("header.why", nil))
	return lines
}

// stepsMarker stands for the deploy steps among the header's lines: they are
// rule.DeployStepsIn's, several lines in each language.
const stepsMarker = "\x00steps"

// CaddyfileIn is what rules.caddy holds, its header said in lang: Caddyfile
// when lang is English.
func (p *Proposal) CaddyfileIn(lang string) (string, error) {
	var b strings.Builder
	comment := func(s string) {
		if s == "" {
			b.WriteString("#\n")
			return
		}
		b.WriteString("# " + s + "\n")
	}
	for _, l := range p.header {
		if l.String() == stepsMarker {
			for _, step := range rule.DeployStepsIn(lang) {
				comment(step)
			}
			continue
		}
		s, err := l.InPlain(lang)
		if err != nil {
			return "", fmt.Errorf("rules: rules.caddy's header in %s: %w", lang, err)
		}
		comment(s)
	}
	return b.String() + "\n" + p.Block, nil
}

// NoProposalComment is what rules.caddy holds when no zone was proposed, in
// lang. printed says where the reasons are: in the notes printed with it
// (`aftermath rules`), else in report.json (`aftermath analyze`).
func NoProposalComment(lang string, printed bool) string {
	t := Messages.Say("header.none", printed)
	s, err := t.InPlain(lang)
	if err != nil {
		s = t.String()
	}
	return s + "\n"
}

// backtestLines says one backtest as header lines.
func backtestLines(bt Backtest) []prose.Text {
	crawler := struct {
		Refused, Requests, Share, First string
	}{Refused: fmtInt(bt.CrawlerRefused), Requests: fmtInt(bt.CrawlerRequests), Share: pct(bt.CrawlerRefusedShare)}
	if !bt.FirstRefusal.IsZero() {
		crawler.First = bt.FirstRefusal.UTC().Format("15:04:05")
	}
	return []prose.Text{
		Messages.Say("header.crawler", crawler),
		Messages.Say("header.readers", struct {
			Refused, Requests, Addresses string
			One                          bool
		}{fmtInt(bt.FingerprintReaderRefused), fmtInt(bt.FingerprintReaderRequests), fmtInt(bt.FingerprintReadersRefused), bt.FingerprintReadersRefused == 1}),
		Messages.Say("header.other", struct{ Refused, Requests, Share string }{fmtInt(bt.OtherLoggedOutRefused), fmtInt(bt.OtherLoggedOutRequests), pct(bt.OtherLoggedOutRefusedShare)}),
		Messages.Say("header.logged_in", struct{ Refused, Requests string }{fmtInt(bt.LoggedInRefused), fmtInt(bt.LoggedInRequests)}),
		Messages.Say("header.baseline", struct{ Refused, Requests string }{fmtInt(bt.BaselineRefused), fmtInt(bt.BaselineRequests)}),
	}
}

func pct(share float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", 100*share), "0"), ".") + "%"
}
