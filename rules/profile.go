package rules

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
)

// Bounds of the profile's tables: labels and paths come from URLs, which an
// attacker can vary without limit.
const (
	maxProfileLabels = 500
	maxPrefixes      = 20
	maxVersionKeys   = 200
)

// crawlerIndex is the index of the crawler whose fingerprint k is, -1 for none.
func crawlerIndex(refs []crawlerRef, k request.ClusterKey) int {
	for i, ref := range refs {
		if ref.key == k {
			return i
		}
		for _, m := range ref.members {
			if m == k {
				return i
			}
		}
	}
	return -1
}

// crawlerFinder finds the crawler a request's fingerprint is
// (crawlerIndex). A fingerprint holds the request's language as it is
// (request.ClusterKey.Lang): a request in a language none of the crawlers'
// fingerprints has, as most of a log's are, is no crawler's, known without
// computing its fingerprint (its agent's family) and comparing it with each.
type crawlerFinder struct {
	refs []crawlerRef
	// langs are the languages of the crawlers' fingerprints, their
	// members' included.
	langs []string
	keys  request.Keyer
}

func newCrawlerFinder(refs []crawlerRef) *crawlerFinder {
	f := &crawlerFinder{refs: refs}
	for _, ref := range refs {
		f.langs = appendNew(f.langs, ref.key.Lang)
		for _, m := range ref.members {
			f.langs = appendNew(f.langs, m.Lang)
		}
	}
	return f
}

// index is crawlerIndex(refs, Key(r)).
func (f *crawlerFinder) index(r *sources.Request) int {
	if !slices.Contains(f.langs, r.Lang) {
		return -1
	}
	return crawlerIndex(f.refs, f.keys.Key(r))
}

// crawlerRef is one crawler_burst finding the rules answer.
type crawlerRef struct {
	finding string
	key     request.ClusterKey
	spread  bool
	onset   time.Time
	end     time.Time
	// expensive are the route templates detect measured as expensive and
	// uncacheable among the crawler's (measured: the finding carried its
	// routes; a report.json from before route costs did not).
	expensive []string
	measured  bool
	// members are the fingerprints of an actor detect joined over several
	// (key is the largest); nil for one fingerprint. method is "POST" for a
	// flood of POSTs (detect.Fingerprint.Method).
	members []request.ClusterKey
	method  string
}

// profile is what the first pass over the access logs learns.
type profile struct {
	crawlers []*crawlerEvidence
	site     siteEvidence
	// first and last are the earliest and latest arrivals (health checks excluded).
	first, last time.Time
	// durations holds PHP durations before the earliest crawler onset: how long
	// ordinary requests take, for the read_timeout advice.
	durations detect.Histogram
	// arrivals counts every arrival by class and stretch of time, and
	// possiblyLate the arrivals a replay's reorder buffer might replay late
	// (lateCheck): with no such arrival and these counts, a replay from a
	// recording of the arrivals that matched a zone is the streaming
	// replay's equal (recording.go).
	arrivals     *arrivalCounts
	possiblyLate int
	// maxDuration is the longest duration (nanoseconds) of an arrival counted.
	maxDuration int64
	// stats is what the pass read, to tell whether a later pass read the same.
	stats accesslog.Stats
	// readers are the addresses under a crawler's fingerprint that behaved
	// like people (readers.go); arrivals counts theirs as ordinary.
	readers fingerprintReaders
}

// readProfile streams the access logs once: what each crawler walked in the
// window (tool labels, path prefixes, API paths), how the site writes URLs to
// special pages, and what ordinary logged-out clients do with the same tools.
// Memory grows with distinct labels and prefixes (bounded), never with lines.
func readProfile(ctx context.Context, in *Input, refs []crawlerRef) (*profile, error) {
	p := &profile{site: siteEvidence{Prefixes: map[string]int{}, Cookie: in.Site.LoggedInCookie, QueryValues: map[string]*valueSample{}}}
	var earliest time.Time
	for _, ref := range refs {
		p.crawlers = append(p.crawlers, &crawlerEvidence{Finding: ref.finding, Key: ref.key, Spread: ref.spread,
			Fingerprints: max(len(ref.members), 1), Method: ref.method,
			Labels: map[string]*labelEvidence{}, Ordinary: map[string]*[8]int{}, Versions: map[string]int{},
			OrdinaryVer: map[string]map[string]*[8]int{}, OrdinaryAllVer: map[string]*[8]int{}, QueryValues: map[string]*valueSample{}})
		if earliest.IsZero() || ref.onset.Before(earliest) {
			earliest = ref.onset
		}
	}
	tokens := make([]string, len(refs))
	for i, ref := range refs {
		tokens[i] = uaToken(ref.key.UA)
	}
	crawlers := newCrawlerFinder(refs)
	classifier := request.PathClassifier{HealthURI: in.Site.HealthURI}
	var labelScratch []byte
	costly := newCostlyRoutes(refs)
	valueKeys := wildcardKeys(refs)
	p.arrivals = newArrivalCounts([]time.Time{in.From, in.To, in.BaselineFrom, in.BaselineTo, earliest}, len(refs))
	var lateness lateCheck
	tracker := readerTracker{}
	var err error
	p.stats, err = in.readClassified(ctx,
		func(batch []sources.Request, classes []request.PathClass) error {
			for i := range batch {
				r := &batch[i]
				var class request.PathClass
				if classes != nil {
					class = classes[i]
				}
				if class == "" {
					class = classifier.Classify(r.Path, r.Query)
				}
				if class == request.ClassHealth {
					continue
				}
				start := r.Start()
				at := start.UnixNano()
				lateness.observe(r.Time.UnixNano(), int64(r.Duration*float64(time.Second)), at)
				if p.first.IsZero() || start.Before(p.first) {
					p.first = start
				}
				if start.After(p.last) {
					p.last = start
				}
				if r.Origin == sources.OriginUpstream && (earliest.IsZero() || start.Before(earliest)) {
					p.durations.Add(r.Duration)
				}
				toolish, route := costly.match(r, class)
				ci := crawlers.index(r)
				cls := classOf(ci, false, r.LoggedIn, reachedPHP(r))
				p.arrivals.add(at, cls)
				var track *addressTrack
				if ci >= 0 {
					ref := &refs[ci]
					inBurst := !start.Before(ref.onset) && start.Before(ref.end)
					track = tracker.observe(ci, r.ClientIP, at, class == request.ClassAsset, r.SiteReferer, r.Method, p.arrivals.stretch(at), cls, inBurst)
				}
				var label string
				switch {
				case route != "" && class != request.ClassTool && class != request.ClassSpecial:
					// No tool name to go by: the rule matches the template.
					label = route
				case toolish || ci >= 0:
					label = request.ToolLabelScratch(r.Path, r.Query, class, &labelScratch)
				}
				if class == request.ClassSpecial {
					p.site.observe(r, label)
				}
				// The window as detect counts it: by log time.
				if ci >= 0 && !r.Time.Before(in.From) && r.Time.Before(in.To) {
					p.crawlers[ci].observe(r, label, toolish, tokens[ci], &track.walked)
					observeValues(p.crawlers[ci].QueryValues, valueKeys, r.Query)
				}
				if ci < 0 && class != request.ClassAsset && r.LoggedIn != sources.LoggedInYes {
					for j, c := range p.crawlers {
						c.observeOrdinary(r, label, toolish, tokens[j])
					}
					observeValues(p.site.QueryValues, valueKeys, r.Query)
				}
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	p.possiblyLate, p.maxDuration = lateness.possiblyLate, lateness.maxDur
	p.readers = tracker.settle(p.arrivals)
	for k := range p.readers {
		p.crawlers[k.crawler].forget(&tracker[k].walked)
	}
	return p, nil
}

// walkedEvidence is what one address's requests added to its crawler's
// evidence (crawlerEvidence.observe), to be taken back out (forget).
type walkedEvidence struct {
	requests, tools, cookie, hints, siteReferer, lang, uaToken int
	versions                                                   []walkedCount[string]
	labels                                                     []walkedCount[*labelEvidence]
}

type walkedCount[K comparable] struct {
	key K
	n   int
}

// add counts one more key in counts.
func addWalked[K comparable](counts []walkedCount[K], key K) []walkedCount[K] {
	for i := range counts {
		if counts[i].key == key {
			counts[i].n++
			return counts
		}
	}
	return append(counts, walkedCount[K]{key: key, n: 1})
}

// observe counts one request of the crawler's fingerprint in the window, in
// the crawler's evidence and in w, the evidence of the address that sent it.
func (c *crawlerEvidence) observe(r *sources.Request, label string, tool bool, token string, w *walkedEvidence) {
	c.Requests++
	w.requests++
	if tool {
		c.ToolRequests++
		w.tools++
		if r.HasCookie {
			c.CookieRequests++
			w.cookie++
		}
		if r.SecChUa {
			c.HintRequests++
			w.hints++
		}
		if r.SiteReferer {
			c.SiteRefererRequests++
			w.siteReferer++
		}
		if r.Lang != "" {
			c.LangRequests++
			w.lang++
		}
		if held, v := tokenVersion(r.UserAgent, token); held {
			c.UATokenRequests++
			w.uaToken++
			if bump(c.Versions, v, maxVersionKeys) {
				w.versions = addWalked(w.versions, v)
			}
		}
	}
	ev := c.Labels[label]
	if ev == nil {
		if len(c.Labels) >= maxProfileLabels {
			return
		}
		ev = &labelEvidence{Prefixes: map[string]int{}, Paths: map[string]int{}}
		c.Labels[label] = ev
	}
	ev.N++
	w.labels = addWalked(w.labels, ev)
	name, byPath, _ := request.SpecialLabel(label)
	switch {
	case byPath:
		if prefix, ok := specialPrefix(r.Path, name); ok {
			bump(ev.Prefixes, prefix, maxPrefixes)
		}
	case label == string(request.ClassAPI):
		bump(ev.Paths, decodedPath(r.Path), maxPrefixes)
	}
}

// forget takes what one address added (w) back out of the crawler's
// evidence: the address turned out to be a reader who shares the
// fingerprint. Its tool clicks from the site's pages count as ordinary ones
// (what a Referer condition would spare); the rest of the ordinary evidence
// (observeOrdinary) goes without it. The path prefixes and API paths of its
// labels stay: they only say how the crawler's tools are written, not
// whether to match them.
func (c *crawlerEvidence) forget(w *walkedEvidence) {
	c.Requests -= w.requests
	c.ToolRequests -= w.tools
	c.CookieRequests -= w.cookie
	c.HintRequests -= w.hints
	c.SiteRefererRequests -= w.siteReferer
	c.OrdinarySiteReferer += w.siteReferer
	c.LangRequests -= w.lang
	c.UATokenRequests -= w.uaToken
	for _, v := range w.versions {
		if c.Versions[v.key] -= v.n; c.Versions[v.key] <= 0 {
			delete(c.Versions, v.key)
		}
	}
	for _, l := range w.labels {
		l.key.N -= l.n
	}
}

// observeOrdinary counts an ordinary logged-out page request, and by tool
// label if it is a tool, by which of the crawler's fingerprint conditions it meets.
func (c *crawlerEvidence) observeOrdinary(r *sources.Request, label string, tool bool, token string) {
	mask := 0
	if c.Key.Lang != "" && r.Lang == c.Key.Lang {
		mask |= condLang
	}
	if !r.SecChUa {
		mask |= condHints
	}
	a := c.ordinaryAgent(r.UserAgent, token)
	held, ver := a.held, a.version
	if held {
		mask |= condUA
	}
	c.OrdinaryAll[mask]++
	a.allVer[mask]++
	if !tool {
		return
	}
	if r.SiteReferer {
		c.OrdinarySiteReferer++
	}
	headers := 0
	if r.HasCookie {
		headers |= hasCookie
	}
	if r.Lang != "" {
		headers |= hasLang
	}
	if r.SiteReferer {
		headers |= hasSiteReferer
	}
	c.OrdinaryPresence[headers][mask]++
	counts := c.Ordinary[label]
	if counts == nil {
		if len(c.Ordinary) >= maxProfileLabels {
			return
		}
		counts = new([8]int)
		c.Ordinary[label] = counts
		c.OrdinaryVer[label] = map[string]*[8]int{}
	}
	counts[mask]++
	versionCounts(c.OrdinaryVer[label], ver)[mask]++
}

// ordinaryAgent returns what observeOrdinary derives from a user agent
// alone: tokenVersion's answer for the crawler's token, and the
// OrdinaryAllVer counts of that version. Ordinary requests come from a few
// thousand agents, each sent by many of them: each is derived once while it
// stays in c.agents.
func (c *crawlerEvidence) ordinaryAgent(ua, token string) *ordinaryAgent {
	a, remembered := c.agents.Slot(ua)
	if !remembered {
		held, ver := tokenVersion(ua, token)
		*a = ordinaryAgent{held: held, version: ver, allVer: versionCounts(c.OrdinaryAllVer, ver)}
	}
	return a
}

// ordinaryAgent is what observeOrdinary derives from a user agent: whether
// it holds the crawler's token and the version after it, and the
// OrdinaryAllVer counts of that version (which stay where they are: no
// version is ever removed from OrdinaryAllVer).
type ordinaryAgent struct {
	version string
	held    bool
	allVer  *[8]int
}

// versionCounts returns m's counts for version v. Past maxVersionKeys
// versions, new ones share the "" entry, which no condition names: the
// overlap with the crawler's versions may then look smaller than it is, which
// can only add a needless condition (the backtest runs Caddy's matchers and is
// exact either way).
func versionCounts(m map[string]*[8]int, v string) *[8]int {
	if c := m[v]; c != nil {
		return c
	}
	if len(m) >= maxVersionKeys {
		v = ""
	}
	c := m[v]
	if c == nil {
		c = new([8]int)
		m[v] = c
	}
	return c
}

// observe notes the URL form of a request for a special page.
func (s *siteEvidence) observe(r *sources.Request, label string) {
	name, byPath, special := request.SpecialLabel(label)
	switch {
	case byPath:
		s.SpecialPath++
		if prefix, ok := specialPrefix(r.Path, name); ok {
			bump(s.Prefixes, prefix, maxPrefixes)
		}
	case special:
		s.SpecialTitle++
	}
}

// specialPrefix returns what comes before a special page's name in a path:
// "/w/" for "/w/Special:WhatLinksHere/Foo".
func specialPrefix(rawPath, name string) (string, bool) {
	p := decodedPath(rawPath)
	i := strings.Index(p, name)
	if i < 0 {
		return "", false
	}
	return p[:i], true
}

func decodedPath(raw string) string {
	if p, err := url.PathUnescape(raw); err == nil {
		return p
	}
	return raw
}

// bump counts key in m, adding new keys only while m holds fewer than limit.
// The key counted is a copy, new or not: key may view a borrowed target
// (readClassified), and m[key]++ on a key m holds stores key over it.
func bump(m map[string]int, key string, limit int) bool {
	if _, ok := m[key]; ok || len(m) < limit {
		m[strings.Clone(key)]++
		return true
	}
	return false
}
