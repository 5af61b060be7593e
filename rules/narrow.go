package rules

import (
	"sort"
	"strings"

	"github.com/aftermath-forensics/aftermath/detect/request"
)

// A zone that stops its crawler but refuses too many other logged-out
// requests (othersMissed) after every size was tried may still be narrowed
// by what it matches: a tool the crawler walked a little and ordinary
// clients use a lot brings more of them into the bucket than it brings of
// the crawler. narrowedProfile leaves such tools out of the crawler's
// evidence, as long as what the crawler sent to them fits in the margin its
// zone has over actorGoal; Propose then proposes again from it and keeps
// the result only where the backtest says the narrower zones meet both goals
// more often. The profile's counts are an estimate (they know the zone's
// fingerprint conditions, not its header ones); the replay decides.

// toolUnit is one or more of a crawler's tool labels that a zone matches
// together: both URL forms of a special page, or one label.
type toolUnit struct {
	name     string
	labels   []string
	crawler  int // the crawler's requests for it in the window
	ordinary int // ordinary logged-out requests for it that the zone's fingerprint conditions hold
}

// narrowedProfile returns prof with, for each zone in zones that missed the
// goal for others in its backtest (bts, in the same order), the tools worth
// leaving out taken out of its crawler's evidence, and whether any was.
func narrowedProfile(prof *profile, zones []Zone, bts []Backtest) (*profile, bool) {
	out := *prof
	out.crawlers = append([]*crawlerEvidence(nil), prof.crawlers...)
	changed := false
	for i := range zones {
		z, bt := &zones[i], bts[i]
		if !othersMissed(bt) || bt.CrawlerRefusedShare < actorGoal {
			continue
		}
		c := prof.crawlers[z.crawler]
		left := toolsToLeave(c, z, bt.CrawlerRefusedShare-actorGoal)
		if len(left) == 0 {
			continue
		}
		n := *c
		n.Labels = make(map[string]*labelEvidence, len(c.Labels))
		for l, ev := range c.Labels {
			n.Labels[l] = ev
		}
		var names []string
		crawler, ordinary := 0, 0
		for _, u := range left {
			for _, l := range u.labels {
				delete(n.Labels, l)
			}
			names = append(names, u.name)
			crawler += u.crawler
			ordinary += u.ordinary
		}
		n.narrowed = Messages.Say("rules.cond.narrowed", struct {
			Tools, Ordinary, Crawler, Requests, Refused, Others, Share string
		}{strings.Join(names, ", "), fmtInt(ordinary), fmtInt(crawler), fmtInt(c.Requests),
			fmtInt(bt.OtherLoggedOutRefused), fmtInt(bt.OtherLoggedOutRequests), pct(bt.OtherLoggedOutRefusedShare)})
		out.crawlers[z.crawler] = &n
		changed = true
	}
	return &out, changed
}

// toolsToLeave picks the tools of z to leave out: those with more ordinary
// requests than the crawler's, most ordinary requests per crawler request
// first, while the crawler's requests to them stay within margin (a share
// of its requests) and one tool is left.
func toolsToLeave(c *crawlerEvidence, z *Zone, margin float64) []toolUnit {
	mask := fingerprintMask(z)
	units := map[string]*toolUnit{}
	var order []string
	for _, l := range z.tools {
		name := l
		if special, _, ok := request.SpecialLabel(l); ok {
			name = special
		}
		u := units[name]
		if u == nil {
			u = &toolUnit{name: name}
			units[name] = u
			order = append(order, name)
		}
		u.labels = append(u.labels, l)
		if ev := c.Labels[l]; ev != nil {
			u.crawler += ev.N
		}
		if counts := c.Ordinary[l]; counts != nil {
			u.ordinary += sumMask(counts, mask)
		}
	}
	var cands []*toolUnit
	for _, name := range order {
		if u := units[name]; u.ordinary > u.crawler {
			cands = append(cands, u)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		return cands[i].ordinary*max(cands[j].crawler, 1) > cands[j].ordinary*max(cands[i].crawler, 1)
	})
	var left []toolUnit
	lost := 0
	for _, u := range cands {
		if len(left)+1 == len(order) {
			break
		}
		if float64(lost+u.crawler) > margin*float64(max(c.Requests, 1)) {
			continue
		}
		lost += u.crawler
		left = append(left, *u)
	}
	return left
}

// fingerprintMask is the condition bits (condLang, condHints, condUA) of
// the fingerprint conditions z carries.
func fingerprintMask(z *Zone) int {
	mask := 0
	if z.Cond.Lang != "" {
		mask |= condLang
	}
	if z.Cond.NoClientHints {
		mask |= condHints
	}
	if z.Cond.UserAgent != "" {
		mask |= condUA
	}
	return mask
}

// goalsMet counts the rules of p that meet both goals in their backtest.
func goalsMet(p *Proposal) int {
	n := 0
	for _, r := range p.Rules {
		if r.Backtest.CrawlerRefusedShare >= actorGoal && !othersMissed(r.Backtest) {
			n++
		}
	}
	return n
}
