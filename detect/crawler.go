package detect

import (
	"context"
	"maps"
	"math"
	"net/netip"
	"sort"
	"strconv"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/prose"
)

func init() {
	Register(Spec{
		Kind: KindCrawlerBurst, ReadsLines: true, New: func() Detector { return crawlerDetector{} },
		NewFacts: func() Facts { return &CrawlerBurstFacts{} },
		Role:     RoleTrigger,
		Scan: ScanMeasure{Metric: Messages.SayLater("crawler_burst.scan_metric", nil),
			Observed: func(f *Finding) float64 { return FactsOf[CrawlerBurstFacts](f).PeakPer10m },
			Baseline: func(f *Finding) float64 { return FactsOf[CrawlerBurstFacts](f).BaselinePer10m.V }},
		Events:  map[Event]int{EventBurstOnset: 1, EventBurstEnd: 13},
		Explain: explainCrawler,
		Moments: crawlerMoments,
	})
}

// CrawlerBurstFacts are a crawler_burst finding's numbers.
type CrawlerBurstFacts struct {
	// DistinctIPs and Requests are the crawler's: the fingerprint's in the
	// window less those of the addresses that read like people
	// (reader.go), which FingerprintReaders and FingerprintReaderRequests
	// count. The per-address figures, the prefixes, AssetShare and the rates
	// (BaselinePer10m, PeakPer10m: the readers of the baseline are those
	// that read like people there) are the crawler's too, and so are
	// UncacheableShare, PHPTimeShare and the finding's routes: summed over
	// its addresses (actorwalk.go), since readers on the same browser walk
	// their own pages, at their own cost.
	DistinctIPs int `json:"distinct_ips"`
	// Clients counts the crawler's addresses as hosts (client.go): an IPv4
	// address each, an IPv6 /64 each, so that one host rotating addresses
	// inside its /64 is one client. ClientIPv6PrefixBits (64) names the
	// unit of its IPv6 addresses, stated only when there were some; an
	// IPv4 client is an address. The headline counts clients.
	Clients                   int        `json:"clients"`
	ClientIPv6PrefixBits      Maybe[int] `json:"client_ipv6_prefix_bits"`
	Requests                  int        `json:"requests"`
	FingerprintReaders        int        `json:"fingerprint_readers"`
	FingerprintReaderRequests int        `json:"fingerprint_reader_requests"`
	RequestsPerIPMedian       float64    `json:"requests_per_ip_median"`
	RequestsPerIPMax          int        `json:"requests_per_ip_max"`
	// BaselinePer10m is the cluster's usual rate; none without a baseline
	// before the incident.
	BaselinePer10m Maybe[float64] `json:"baseline_per_10m"`
	// RoseFromPer10m is the rate the rise that starts at the finding's start
	// rose from, stated with BaselinePer10m: the baseline's, unless the rate
	// first held a slower walk above it and the start is where it stepped up
	// from that walk (rise.go's stepOnset, trigger.go's riseIntoIncident),
	// when it is the walk's count over the ten minutes before the step.
	RoseFromPer10m Maybe[float64] `json:"rose_from_per_10m"`
	PeakPer10m     float64        `json:"peak_per_10m"`
	AssetShare     float64        `json:"asset_share"`
	// UncacheableShare is the share of its page requests that went to route
	// templates measured as expensive and uncacheable (routecost.go).
	UncacheableShare float64 `json:"uncacheable_share"`
	// PHPTimeShare is its addresses' share of the window's PHP time, when
	// the log records PHP time.
	PHPTimeShare Maybe[float64] `json:"php_time_share"`
	// DistinctPrefixes24 and DistinctPrefixes64 count the IPv4 /24 and IPv6
	// /64 networks, each only when the cluster used that address family.
	DistinctPrefixes24 Maybe[int] `json:"distinct_prefixes_24"`
	DistinctPrefixes64 Maybe[int] `json:"distinct_prefixes_64"`
	// FingerprintOthers and FingerprintOtherRequests count the addresses
	// of the fingerprint (readers apart) that sent most of their requests
	// outside the burst's span, and their requests (actor.go): other
	// clients sharing its headers, not part of the burst. Stated only when
	// there were some.
	FingerprintOthers        Maybe[int] `json:"fingerprint_others"`
	FingerprintOtherRequests Maybe[int] `json:"fingerprint_other_requests"`
	// FingerprintOthersOutside, FingerprintOthersOffRoute and
	// FingerprintOthersFew count FingerprintOthers by why they were set
	// apart (actor.go's leftOut), stated with it and summing to it: most of
	// their requests came outside the burst's span; or they came in it,
	// only to pages the burst hardly walked; or they sent, in the whole
	// window, fewer requests than the burst's median address sent a minute
	// during it (BurstPacePerMin, stated when some did).
	FingerprintOthersOutside  Maybe[int]     `json:"fingerprint_others_outside"`
	FingerprintOthersOffRoute Maybe[int]     `json:"fingerprint_others_off_route"`
	FingerprintOthersFew      Maybe[int]     `json:"fingerprint_others_few"`
	BurstPacePerMin           Maybe[float64] `json:"burst_pace_per_min"`
	// Spread: a limit per client, set above the busiest ordinary client
	// (LimitAbove), would refuse less than MinLimitCaught of the crawl
	// (perclient.go); the rules then write one bucket for all its clients.
	Spread bool `json:"spread"`
	// OnsetLeadS (seconds the rise started before the onset, negative
	// after) and PHPAddedShare are judgeTrigger's weighing.
	OnsetLeadS    Maybe[float64] `json:"onset_lead_s"`
	PHPAddedShare Maybe[float64] `json:"php_added_share"`
	// Fingerprints counts the fingerprints (user agent, language, client
	// hints) the crawler's requests were spread over when they were one
	// actor (actorjoin.go); stated only then.
	Fingerprints Maybe[int] `json:"fingerprints"`
	// ConsequenceAfterS is how long (seconds) clients had been failed when
	// it rose, stated only when that is past ConsequenceLag: a consequence
	// of the outage, never its trigger.
	ConsequenceAfterS Maybe[float64] `json:"consequence_after_s"`
}

func (*CrawlerBurstFacts) FindingKind() Kind { return KindCrawlerBurst }

// RoseFrom is the rate the rise started from, as the prose states it:
// RoseFromPer10m, or, in facts read back from a report.json written before
// that was stated, the baseline's, which is what such a report meant.
func (f *CrawlerBurstFacts) RoseFrom() Maybe[float64] {
	if f.RoseFromPer10m.OK {
		return f.RoseFromPer10m
	}
	return f.BaselinePer10m
}

func explainCrawler(p Phraser, f *Finding, s Story) string {
	cf := FactsOf[CrawlerBurstFacts](f)
	b, pk := cf.RoseFrom().V, cf.PeakPer10m
	// The networks the crawl spread over: IPv4 /24s, else IPv6 /64s.
	pfx, pfxBits := float64(cf.DistinctPrefixes24.V), "/24"
	if v := cf.DistinctPrefixes64; v.OK && pfx == 0 {
		pfx, pfxBits = float64(v.V), "/64"
	}
	var paths []string
	if f.Fingerprint != nil {
		paths = f.Fingerprint.Paths
	}
	if len(paths) > 6 {
		paths = paths[:6]
	}
	// The rise as a factor ("12.5"), a number either language prints as is.
	ratio := ""
	if b > 0 {
		ratio = strconv.FormatFloat(math.Round(pk/b*10)/10, 'f', -1, 64)
	}
	// Stepped: the rise started from a slower walk, not from the usual rate.
	stepped := cf.RoseFrom().V != cf.BaselinePer10m.V
	return p.Say("crawler_burst.explain", struct {
		about[CrawlerBurstFacts]
		Crowd, Ratio, PrefixBits string
		Prefixes                 float64
		Paths                    []string
		Unseen                   string
		Stepped                  bool
		SetApart                 setApart
	}{about[CrawlerBurstFacts]{f, cf}, Crowd(p, f), ratio, pfxBits, pfx, paths, sayUnseen(p, s, f.Start), stepped, cf.setApart()})
}

// setApart is what the facts state of the fingerprint's addresses left out
// of the burst. A report.json written before the reasons were stated has
// none: its explanation counts the addresses without a reason.
func (f *CrawlerBurstFacts) setApart() setApart {
	return setApart{Others: f.FingerprintOthers.V, OtherRequests: f.FingerprintOtherRequests.V, Left: leftOut{
		Outside: f.FingerprintOthersOutside.V, OffRoute: f.FingerprintOthersOffRoute.V, Few: f.FingerprintOthersFew.V, PacePerMin: f.BurstPacePerMin.V,
	}}
}

// Timeline events of a crawler burst.
const (
	EventBurstOnset Event = "burst_onset"
	EventBurstEnd   Event = "burst_end"
)

func crawlerMoments(f *Finding, s Story) []Moment {
	// Where the access log begins (or resumes) with the crawl already
	// coming in, its rise is not seen: the moment says so, not "start to
	// climb".
	unseen := unseenStart(s, f.Start)
	out := []Moment{{Time: f.Start, Event: EventBurstOnset, Topic: "burst", Text: func(p Phraser) string {
		return p.Say("crawler_burst.moment.onset", struct {
			Crowd  string
			Facts  *CrawlerBurstFacts
			Unseen *Unseen
		}{Crowd(p, f), FactsOf[CrawlerBurstFacts](f), unseen})
	}}}
	if _, to := s.Window(); f.End.After(f.Start) && f.End.Before(to) {
		// Where the access log resumes after a gap with the crawl over, it
		// ended unseen, somewhere in the gap: the moment is the log's
		// resumption and says so. Where the log ends (its tail), no end is
		// seen at all.
		end := unseenStart(s, f.End)
		switch {
		case end == nil:
			out = append(out, Moment{Time: f.End, Event: EventBurstEnd, Topic: "burst_end", Text: func(p Phraser) string {
				return p.Say("crawler_burst.moment.end", (*Unseen)(nil))
			}})
		case end.Gap:
			out = append(out, Moment{Time: end.To, Event: EventBurstEnd, Topic: "burst_end", Text: func(p Phraser) string {
				return p.Say("crawler_burst.moment.end", end)
			}})
		}
	}
	return out
}

// Crowd names a crawler cluster in prose from its fingerprint:
// "logged-out Chrome 121 requests with Accept-Language zh-cn".
func Crowd(p Phraser, f *Finding) string {
	return p.Say("crawler_burst.crowd", f.Fingerprint)
}

// crawlerDetector finds client fingerprints that rose far above their baseline
// and behave like automation (design.md, crawler_burst). A rise that behaves
// like people (assets after pages, cacheable articles) is a surge, never a crawler.
type crawlerDetector struct{}

func (crawlerDetector) Name() Kind { return KindCrawlerBurst }

// Thresholds, all relative: a burst must be riseRatio times its own baseline and
// riseZ Poisson deviations above it, and carry minShare of the window's requests
// so a few strays do not count.
const (
	riseRatio = 3.0
	riseZ     = 5.0
	minShare  = 0.02
	// Automation signs: browsers fetch assets after pages; a cluster whose
	// requests are under maxAssetShare assets is not rendering pages.
	maxAssetShare = 0.05
	// At least minToolShare of its page requests go to route templates the
	// data measured as expensive and uncacheable (routecost.go).
	minToolShare = 0.5
	// noBaselinePHPShare: with no baseline to rise above, a fingerprint must
	// have carried at least this share of the window's PHP time.
	noBaselinePHPShare = 0.25
)

// Known clients. The site's own automated clients (desktop sync clients,
// mobile apps, API pollers) are its accounts' clients: they sign every
// request with the account's credentials (an Authorization header, Basic
// with an app password or a Bearer token, or the logged-in cookie), and
// they sent under the same fingerprint from the same addresses all through
// the baseline; when they rise (a re-scan after an upgrade, retries in an
// outage), the rise is theirs, not a crawler's. Steadiness alone is not
// enough: a scraper that ran steadily from a few addresses of its own all
// through the baseline and then multiplied its rate was there before too,
// but it signs nothing. An address is a known client when its requests
// under the fingerprint fell in at least half of the baseline's ten-minute
// buckets, over a baseline of at least minKnownBaseline (a shorter one
// cannot show a client steady through it), and at least minCredentialed of
// its requests (baseline and window) presented credentials; a burst most of
// whose requests (minKnownShare) came from known clients is a surge of the
// site's clients, not a crawler.
const (
	minKnownShare    = 0.5
	minKnownBaseline = time.Hour
	minCredentialed  = 0.5
)

// knownClients counts the burst's addresses (its actor's when it has one;
// a browser's readers apart) that were known clients over the baseline
// [bFrom, bTo), steady and signed, and the share of the burst's window
// requests they sent.
func (b burst) knownClients(bFrom, bTo time.Time) (known int, share float64) {
	if bTo.Sub(bFrom) < minKnownBaseline {
		return 0, 0
	}
	c := b.c
	first, last := bFrom.Unix()/60, bTo.Unix()/60
	buckets := int((last - first + 9) / 10)
	total, fromKnown := 0, 0
	browser := request.IsBrowser(c.Key.UA)
	for ip, ab := range c.IPs {
		// A browser's readers are people, not its burst; a declared bot's
		// addresses that pace like readers are its own (CrawlerPerMinute).
		if ab.Reader() && browser || !ab.Reader() && !b.inActor(ip) {
			continue
		}
		total += ab.Requests
		seen := map[int64]bool{}
		requests, signed := 0, 0
		for _, ips := range []map[netip.Addr]*AddressBehaviour{c.before, c.IPs} {
			if a := ips[ip]; a != nil {
				requests += a.Requests
				signed += int(a.Credentialed)
				for _, r := range a.arrivals {
					if m := int64(r.minute); m >= first && m < last {
						seen[(m-first)/10] = true
					}
				}
			}
		}
		if 2*len(seen) >= buckets && float64(signed) >= minCredentialed*float64(requests) {
			known++
			fromKnown += ab.Requests
		}
	}
	if total == 0 {
		return 0, 0
	}
	return known, float64(fromKnown) / float64(total)
}

// burst is one fingerprint's rise, before it is judged automated or not.
type burst struct {
	c                  *Cluster
	baseline10, peak10 float64
	peakAt             time.Time
	onset, end         time.Time
	// roseFrom10 is the level per 10 minutes the rise that starts at onset
	// started from: baseline10, unless the rate first held a plateau above
	// it and its start was moved to where it stepped up from that plateau
	// (stepOnset, riseIntoIncident), when it is the plateau's.
	roseFrom10 float64
	// requests and assetShare are the crawler's: the fingerprint's less the
	// readers who share it (reader.go), readers and readerRequests theirs.
	requests                int
	assetShare              float64
	readers, readerRequests int
	// addresses are its addresses (actorAddresses), gathered once for what
	// they walked and for the finding's counts.
	addresses map[netip.Addr]*AddressBehaviour
	// walked is what its addresses asked for and PHP's time on them;
	// toolShare is the share of their page requests that went to
	// expensive, uncacheable route templates, as measured; routes are
	// their templates. The readers and other clients who share the
	// fingerprint walked their own pages, which are not the crawler's.
	walked    actorWalked
	toolShare float64
	routes    []RouteCost
	// unmeasured is the share of its page requests whose templates PHP
	// answered too rarely anywhere in the data for their cost to be known.
	unmeasured float64
	// baselineSampled: baseline10 comes from the baseline minutes read
	// whole (a pushdown's sample); notRead: its lines in the window were read
	// only in some minutes (the rest were counted).
	baselineSampled, notRead bool
	// startEstimated: whether its rise ran into the incident was judged
	// with minutes only counted (riseIntoIncident).
	startEstimated bool
	// readersRose: the fingerprint rose (fingerprintBaseline10 to
	// fingerprintPeak10) but not once its readers are left out.
	readersRose                              bool
	fingerprintBaseline10, fingerprintPeak10 float64
	// routesEstimated says why the routes' costs are estimated ("" when
	// they are measured whole: routesEstimate).
	routesEstimated string
	// actor holds the addresses that took part in the burst when some of
	// the fingerprint's did not (actor.go; nil: all but its readers);
	// left counts those set apart by why and otherRequests their requests,
	// actorPerMinute is the actor's own rate.
	actor          map[netip.Addr]bool
	left           leftOut
	otherRequests  int
	actorPerMinute map[int64]int
	// readerShare is the share of the fingerprint's addresses in the window
	// that read like people; uncachedShare the share of its page requests
	// that went to templates PHP answered itself (uncacheableShare or more).
	readerShare, uncachedShare float64
	// minor: it rose, but its own requests (readers and other clients
	// apart) were under minShare of the window's.
	minor bool
}

func (d crawlerDetector) Detect(ctx context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error) {
	if ev.Traffic == nil {
		return nil, Because(OutcomeCouldNotRun, Messages.Say("crawler_burst.no_log", nil)), nil
	}
	bFrom, bTo, noBaseline := ev.baselineRange()
	windowTotal := 0
	for _, c := range ev.Traffic.Clusters() {
		windowTotal += c.Requests
	}
	windowPHP := ev.windowPHPSeconds()
	costs := ev.measureRoutes()
	var found []Finding
	var said crawlerChecked
	for _, c := range ev.joinActors(ev.Traffic.Clusters(), bFrom, bTo) {
		b, ok := riseOf(c, ev, bFrom, bTo, windowTotal, costs)
		if !ok {
			if b.minor && !noBaseline {
				said.Minor = append(said.Minor, crawlerMinor{sayKey(c.Key), b.requests, windowTotal})
			}
			if b.readersRose && !noBaseline {
				said.Surges = append(said.Surges, crawlerSurge{Key: sayKey(c.Key), Baseline: b.fingerprintBaseline10, Peak: b.fingerprintPeak10, ReadersOnly: true, Readers: b.readers})
			}
			continue
		}
		// Without a baseline every fingerprint "rose" from nothing: only one
		// that carried a material share of PHP's time is worth judging.
		if noBaseline && (windowPHP <= 0 || b.walked.phpSeconds < noBaselinePHPShare*windowPHP) {
			continue
		}
		if known, share := b.knownClients(bFrom, bTo); share >= minKnownShare {
			// The site's own clients doing more (sync clients re-scanning
			// after an upgrade, retrying in an outage): not a new actor.
			said.Surges = append(said.Surges, crawlerSurge{Key: sayKey(c.Key), Baseline: b.baseline10, Peak: b.peak10,
				Why: Messages.Say("crawler_burst.human.known", struct {
					Share float64
					Known int
				}{share * 100, known})})
			continue
		}
		if reason, automated := automation(b); !automated {
			if b.unmeasured >= 0.5 && b.assetShare < maxAssetShare {
				// Not "cheap": unknown. Say so rather than call it legitimate.
				said.Unjudged = append(said.Unjudged, crawlerSurge{Key: sayKey(c.Key), Baseline: b.baseline10, Peak: b.peak10, Unmeasured: b.unmeasured})
				continue
			}
			said.Surges = append(said.Surges, crawlerSurge{Key: sayKey(c.Key), Baseline: b.baseline10, Peak: b.peak10, Why: reason})
			continue
		}
		b.markCostly()
		f := crawlerFinding(b, ev)
		ev.judgeTrigger(&f, c)
		found = append(found, f)
	}
	check := Check{}
	said.None = len(found) == 0 && len(said.Surges) == 0 && len(said.Unjudged) == 0
	said.NoBaseline = noBaseline
	if said.None {
		said.RiseRatio, said.MinSharePct, said.Uncovered = riseRatio, minShare*100, ev.unjudgedClause()
	}
	said.MinShare, said.PHPShare, said.MinSamples = minShare, noBaselinePHPShare, minCostSamples
	if said.None || len(said.Surges) > 0 || len(said.Minor) > 0 || len(said.Unjudged) > 0 || noBaseline {
		check.SetReason(Messages.Say("crawler_burst.checked", said))
	}
	return found, check, nil
}

// crawlerChecked is what the crawler check says when it finds no crawler,
// or beside those it found: fingerprints that rose but read like people
// (Surges), carried too small a share once their readers are left out
// (Minor) or could not be costed (Unjudged), and whether there was a
// baseline to rise from.
type crawlerChecked struct {
	None                   bool
	RiseRatio, MinSharePct float64
	Uncovered              prose.Text
	Surges, Unjudged       []crawlerSurge
	Minor                  []crawlerMinor
	MinShare, PHPShare     float64
	MinSamples             int
	NoBaseline             bool
}

// crawlerSurge is a fingerprint's rise per 10 minutes and why it was not
// judged a crawler: only its readers rose (Readers), it read like people
// (Why), or Unmeasured of its page requests went to routes too rarely
// answered to cost.
type crawlerSurge struct {
	Key            prose.Text
	Baseline, Peak float64
	ReadersOnly    bool
	Readers        int
	Why            prose.Text
	Unmeasured     float64
}

// crawlerMinor is a fingerprint that rose with Requests of the window's
// Total, its readers apart.
type crawlerMinor struct {
	Key             prose.Text
	Requests, Total int
}

// sayKey is a client fingerprint as a sentence names it: "Chrome 121 /
// zh-cn / logged out / no client hints".
func sayKey(k request.ClusterKey) prose.Text {
	return Messages.Say("crawler_burst.key", struct {
		UA, Lang, LoggedIn string
		NoClientHints      bool
	}{k.UA, k.Lang, k.LoggedIn.String(), k.NoClientHints})
}

// SayKey is a client fingerprint as a sentence names it, for the rules'
// rationale: the English is ClusterKey.String's.
func SayKey(k request.ClusterKey) prose.Text { return sayKey(k) }

// riseOf measures a cluster against its baseline and reports whether it burst.
func riseOf(c *Cluster, ev *Evidence, bFrom, bTo time.Time, windowTotal int, costs routeCosts) (burst, bool) {
	b := burst{c: c}
	if float64(c.Requests) < minShare*float64(windowTotal) {
		return b, false
	}
	// Its rates are the crawler's: the readers who share the fingerprint
	// are left out of them, as of its addresses and requests.
	perMinute := c.CrawlerPerMinute()
	b.baseline10, b.baselineSampled = ev.clusterBaseline10(c, perMinute, bFrom, bTo)
	b.notRead = !ev.Traffic.readWhole(c) && ev.countedIn(ev.From, ev.To)
	peak, peakAt := rollingMax(perMinute, ev.From, ev.To, 10)
	b.peak10, b.peakAt = float64(peak), peakAt
	if poissonExcess(b.peak10, b.baseline10, riseRatio, riseZ) {
		b.onset, b.end, b.roseFrom10 = sustainedRise(perMinute, b.baseline10, ev.From, ev.To)
	}
	if b.onset.IsZero() {
		ev.readersRise(c, &b, bFrom, bTo)
		return b, false
	}
	ev.burstActor(&b)
	if b.actorPerMinute != nil {
		perMinute = b.actorPerMinute
	}
	t, from10, ok, estimated := riseIntoIncident(c, perMinute, ev, b.onset)
	if ok {
		b.onset, b.roseFrom10 = t, from10
	}
	b.startEstimated = estimated
	b.readers, b.readerRequests, b.assetShare = readersAndAssets(c)
	b.requests = c.Requests - b.readerRequests - b.otherRequests
	if b.actor != nil {
		assets := 0
		for ip := range b.actor {
			assets += c.IPs[ip].Assets
		}
		b.assetShare = float64(assets) / float64(max(b.requests, 1))
	}
	// The share that makes a burst worth judging is the crawler's own: the
	// readers who share its fingerprint (a lunch crowd of logged-in staff,
	// most of whom fetched assets) weigh nothing in it, nor do its other
	// clients.
	own := b.requests
	if !request.IsBrowser(c.Key.UA) {
		// A declared bot is nobody's browser: its addresses that pace
		// like readers are its own requests (CrawlerPerMinute).
		own = c.Requests - b.otherRequests
	}
	if float64(own) < minShare*float64(windowTotal) {
		b.minor, b.requests = true, own
		return b, false
	}
	if browsed, browsedRequests := browsers(c); own != b.requests && browsed > 0 {
		if !ev.remainderStandsOut(&b, own-browsedRequests, bFrom, bTo, windowTotal) {
			// Its reader-paced addresses made the rise: what is left once
			// they are apart is judged on its own numbers, and did not
			// stand out.
			b.readersRose, b.fingerprintBaseline10, b.fingerprintPeak10 = true, b.baseline10, b.peak10
			return b, false
		}
		t, from10, ok, estimated := riseIntoIncident(c, b.remainderPerMinute(), ev, b.onset)
		if ok {
			b.onset, b.roseFrom10 = t, from10
		}
		b.startEstimated = estimated
	}
	b.readerShare = float64(b.readers) / float64(max(len(c.IPs), 1))
	b.addresses = b.actorAddresses()
	b.walked = c.walkedBy(b.addresses, ev.Traffic.routes.canonical)
	b.routes, b.toolShare, b.unmeasured = costedRoutes(b.walked.routes, b.walked.requests, b.walked.assets, costs)
	b.uncachedShare = uncachedShare(b.walked.requests-b.walked.assets, b.routes)
	b.routesEstimated = ev.routesEstimate(b.routes)
	return b, true
}

// remainderStandsOut judges a burst whose agent is not a browser, and
// whose rise counted the addresses that read like people as its own
// (CrawlerPerMinute), on what is left without those that browsed
// (Browsed: a poller's slow addresses stay its own), as a browser's is
// judged: its own requests carry at least minShare of the window's, and its
// own rate (remainderPerMinute) rose above its own baseline as riseOf
// judges a rise. A
// fingerprint whose rise was its reader-paced addresses' (people on an
// in-app browser the agent table does not name, retrying in an outage)
// leaves a few requests that did not rise: a finding built on them would
// state the readers' rise as theirs.
func (ev *Evidence) remainderStandsOut(b *burst, requests int, bFrom, bTo time.Time, windowTotal int) bool {
	if float64(requests) < minShare*float64(windowTotal) {
		return false
	}
	perMinute := b.remainderPerMinute()
	base, sampled := ev.clusterBaseline10(b.c, perMinute, bFrom, bTo)
	peak, peakAt := rollingMax(perMinute, ev.From, ev.To, 10)
	if !poissonExcess(float64(peak), base, riseRatio, riseZ) {
		return false
	}
	onset, end, from10 := sustainedRise(perMinute, base, ev.From, ev.To)
	if onset.IsZero() {
		return false
	}
	// The rise the finding states is the remainder's own, not the one its
	// readers made with it.
	b.baseline10, b.baselineSampled, b.peak10, b.peakAt, b.onset, b.end = base, sampled, float64(peak), peakAt, onset, end
	b.roseFrom10 = from10
	return true
}

// remainderPerMinute is the rate of b's requests without its fingerprint's
// readers: its actor's when it has one (which holds no reader), else the
// fingerprint's with its readers apart.
func (b *burst) remainderPerMinute() map[int64]int {
	if b.actorPerMinute != nil {
		return b.actorPerMinute
	}
	return b.c.apartPerMinute((*AddressBehaviour).Browsed)
}

// browsers counts c's addresses in the window that read like people by
// what a browser does (Browsed), and their requests.
func browsers(c *Cluster) (n, requests int) {
	for _, ab := range c.IPs {
		if ab.Browsed() {
			n++
			requests += ab.Requests
		}
	}
	return n, requests
}

// sustainedRise finds, in perMinute over [from, to), the onset and fade of
// a rise above baseline10 per 10 minutes: the first minute of three in a
// row clearly above the baseline rate, or of the step up into the peak when
// the rate first held steady above the baseline (stepOnset), and the end of
// the last minute above it (zero times when there is none). from10 is the
// level per 10 minutes the rise started from: the plateau's just before the
// step when there was one, else baseline10.
func sustainedRise(perMinute map[int64]int, baseline10 float64, from, to time.Time) (onset, end time.Time, from10 float64) {
	level := RiseLevel(baseline10/10, riseZ)
	first, ok := SustainedOnset(perMinute, level, from.Unix()/60, to.Unix()/60)
	if !ok {
		return onset, end, baseline10
	}
	// The rise starts where the rate rose into its peak: a low walk that
	// cleared the baseline first is a step below it (stepOnset), and the
	// rise is from the walk's level. Its fade is still measured against the
	// baseline, from its first minute.
	step, plateau, stepped := stepOnset(perMinute, first, to.Unix()/60)
	onset, from10 = time.Unix(step*60, 0).UTC(), baseline10
	if stepped {
		from10 = plateau
	}
	for m := first; m < to.Unix()/60; m++ {
		if float64(perMinute[m]) >= level {
			end = time.Unix(m*60, 0).UTC().Add(time.Minute)
		}
	}
	return onset, end, from10
}

// readersRise marks b when c did not rise once its readers are left out but
// rose with them, as riseOf judges a rise: a crowd of people, which the
// check says rather than nothing.
func (ev *Evidence) readersRise(c *Cluster, b *burst, bFrom, bTo time.Time) {
	readers, _, _ := readersAndAssets(c)
	if readers == 0 {
		return
	}
	base, _ := ev.clusterBaseline10(c, c.PerMinute(), bFrom, bTo)
	peak, _ := rollingMax(c.PerMinute(), ev.From, ev.To, 10)
	if !poissonExcess(float64(peak), base, riseRatio, riseZ) {
		return
	}
	if onset, _, _ := sustainedRise(c.PerMinute(), base, ev.From, ev.To); onset.IsZero() {
		return
	}
	b.readersRose, b.fingerprintBaseline10, b.fingerprintPeak10, b.readers = true, base, float64(peak), readers
}

// readersAndAssets counts the addresses under a fingerprint that read like
// people (readers) and their requests, and is the share of the other
// requests that were static files: browsers rendering pages fetch them, most
// crawlers do not.
func readersAndAssets(c *Cluster) (readers, readerRequests int, assetShare float64) {
	readerAssets := 0
	for _, ab := range c.IPs {
		if ab.Reader() {
			readers++
			readerRequests += ab.Requests
			readerAssets += ab.Assets
		}
	}
	if rest := c.Requests - readerRequests; rest > 0 {
		return readers, readerRequests, float64(c.Classes[request.ClassAsset]-readerAssets) / float64(rest)
	}
	// Everyone under the fingerprint read like a person.
	return readers, readerRequests, float64(c.Classes[request.ClassAsset]) / float64(c.Requests)
}

// Reading is how a client fingerprint read in the window, measured as the
// crawler detector measures it for JudgeAutomation: the share of its requests
// (its readers' apart, readersAndAssets) that were assets, and the share of
// its page requests that went to routes whose PHP cost was measured expensive
// (uncacheable).
type Reading struct {
	AssetShare, ExpensiveShare float64
}

// WindowReadings measures the Reading of every client fingerprint of the
// window, so that the scan judges automation by detect's measured definition
// (JudgeAutomation) rather than by path names.
func (ev *Evidence) WindowReadings() map[request.ClusterKey]Reading {
	out := map[request.ClusterKey]Reading{}
	if ev.Traffic == nil {
		return out
	}
	costs := ev.measureRoutes()
	for _, c := range ev.Traffic.Clusters() {
		_, expensive, _ := ev.clientRoutes(c, costs)
		_, _, assets := readersAndAssets(c)
		out[c.Key] = Reading{AssetShare: assets, ExpensiveShare: expensive}
	}
	return out
}

// baselinePer10 is a cluster's usual count per 10 minutes: the median of the
// 10-minute buckets of the baseline when it holds enough of them, else ten
// times the median minute (a short baseline has too few buckets for a median
// to mean much).
func baselinePer10(perMinute map[int64]int, from, to time.Time) float64 {
	if buckets := countsPerBucket(perMinute, from, to, 10); len(buckets) >= 6 {
		return Median(buckets)
	}
	return 10 * Median(countsPerBucket(perMinute, from, to, 1))
}

// clusterBaseline10 is c's usual count per 10 minutes over [from, to)
// (baselinePer10) from perMinute, its requests per minute. When some of
// those minutes were only counted (a pushdown) and c's lines were not read
// whole, the minutes read whole speak for it, and sampled is true: the
// figure is an estimate.
func (ev *Evidence) clusterBaseline10(c *Cluster, perMinute map[int64]int, from, to time.Time) (per10 float64, sampled bool) {
	t := ev.Traffic
	if t.readWhole(c) || !ev.countedIn(from, to) {
		return baselinePer10(perMinute, from, to), false
	}
	var read []int
	for m := from.Unix() / 60; m < (to.Unix()+59)/60; m++ {
		if t.readMinute(m) {
			read = append(read, perMinute[m])
		}
	}
	return 10 * Median(read), true
}

// countedIn reports whether a minute of [from, to) was only counted, not
// read (a pushdown).
func (ev *Evidence) countedIn(from, to time.Time) bool {
	t := ev.Traffic
	if !t.counted {
		return false
	}
	for m := from.Unix() / 60; m < (to.Unix()+59)/60; m++ {
		if !t.readMinute(m) {
			return true
		}
	}
	return false
}

// automation decides whether a burst is automated, or says why it looks human.
// Cheap pages speak for people only where people are seen: a browser
// fingerprint none of whose addresses read like a person (under
// maxNoReaderShare of them fetched assets, clicked through the site's pages
// or dwelt), that fetched no assets and whose pages PHP rendered each time
// (uncacheable) at noReaderCostFactor times the site's typical request or more
// is a crawl, though each page costs under expensiveFactor: a WordPress search crawl over thousands of
// IPv6 addresses walks `/?s=`, REST searches and `?replytocom=` at 1.6 to 3.5
// times an article's PHP time, each answer PHP's.
func automation(b burst) (prose.Text, bool) {
	why := JudgeAutomation(b.c.Key, b.assetShare, b.toolShare)
	if !why.Automated() && b.noReaderCrawl() {
		return prose.Text{}, true
	}
	return b.sayHuman(why), why.Automated()
}

// sayHuman says why a burst looks human (JudgeAutomation's why), in the
// detector's words; an automated burst is said by its finding instead.
func (b burst) sayHuman(why Automation) prose.Text {
	switch why {
	case FetchedAssets:
		return Messages.Say("crawler_burst.human.assets", b.assetShare*100)
	case ReadCheapPages:
		return Messages.Say("crawler_burst.human.cheap", b.toolShare*100)
	}
	return prose.Text{}
}

// markCostly sets Costly on the routes of a crawl judged automated only
// because nobody was seen reading (automation): those its verdict rests on.
func (b burst) markCostly() {
	if JudgeAutomation(b.c.Key, b.assetShare, b.toolShare).Automated() {
		return
	}
	for i := range b.routes {
		b.routes[i].Costly = costlyUncached(b.routes[i]) && !b.routes[i].Expensive
	}
}

// noReaderCrawl: nobody was seen reading under the fingerprint, it fetched
// no assets, and most of its pages were PHP's each time at noReaderCostFactor
// times the typical request or more.
func (b burst) noReaderCrawl() bool {
	return b.assetShare < maxAssetShare && b.readerShare < maxNoReaderShare && b.uncachedShare >= minToolShare
}

// maxNoReaderShare: under this share of a fingerprint's addresses reading
// like people, nobody is seen reading. noReaderCostFactor: where nobody is
// seen reading, a page PHP rendered each time at this many times the site's
// typical PHP request is work the crawl added (expensiveFactor's margin
// guards readers' own pages, and there are none to guard).
const (
	maxNoReaderShare   = 0.05
	noReaderCostFactor = 1.5
)

// uncachedShare is the share of pages, the page requests routes count, that
// went to templates PHP answered itself (uncacheableShare of their answers
// or more, measured on at least minCostSamples PHP answers) at
// noReaderCostFactor times the site's typical PHP request or more.
func uncachedShare(pages int, routes []RouteCost) float64 {
	if pages <= 0 {
		return 0
	}
	n := 0
	for _, r := range routes {
		if costlyUncached(r) {
			n += r.Requests
		}
	}
	return clampUnit(float64(n) / float64(pages))
}

// costlyUncached: PHP answered the template itself (uncacheableShare of its
// answers or more, on minCostSamples PHP answers) at noReaderCostFactor times
// the site's typical PHP request or more.
func costlyUncached(r RouteCost) bool {
	return r.PHPAnswers >= minCostSamples && r.PHPShare >= uncacheableShare && r.SiteTypical > 0 && r.PHPPerRequest >= noReaderCostFactor*r.SiteTypical
}

func crawlerFinding(b burst, ev *Evidence) Finding {
	c := b.c
	// The crawler's addresses: the fingerprint's less its readers' and
	// its other clients'.
	actor := b.addresses
	perIP := make([]int, 0, len(actor))
	maxPerIP := 0
	for _, ab := range actor {
		n := ab.Requests
		perIP = append(perIP, n)
		maxPerIP = max(maxPerIP, n)
	}
	medianPerIP := Median(perIP)
	totalPHP := ev.windowPHPSeconds()
	nets := networksOf(maps.Keys(actor), len(actor))
	clients := nets.clients
	facts := &CrawlerBurstFacts{
		DistinctIPs:               len(perIP),
		Clients:                   clients,
		Requests:                  b.requests,
		FingerprintReaders:        b.readers,
		FingerprintReaderRequests: b.readerRequests,
		RequestsPerIPMedian:       medianPerIP,
		RequestsPerIPMax:          maxPerIP,
		PeakPer10m:                b.peak10,
		AssetShare:                round(b.assetShare, 3),
		UncacheableShare:          round(b.toolShare, 3),
	}
	if others := b.left.total(); others > 0 {
		facts.FingerprintOthers, facts.FingerprintOtherRequests = Some(others), Some(b.otherRequests)
		facts.FingerprintOthersOutside, facts.FingerprintOthersOffRoute, facts.FingerprintOthersFew = Some(b.left.Outside), Some(b.left.OffRoute), Some(b.left.Few)
		if b.left.Few > 0 {
			facts.BurstPacePerMin = Some(b.left.PacePerMin)
		}
	}
	if totalPHP > 0 {
		facts.PHPTimeShare = Some(round(b.walked.phpSeconds/totalPHP, 3))
	}
	// Nothing before the incident to compare with: no usual rate to state.
	if _, _, none := ev.baselineRange(); !none {
		facts.BaselinePer10m = Some(b.baseline10)
		facts.RoseFromPer10m = Some(b.roseFrom10)
	}
	if nets.v4 > 0 {
		facts.DistinctPrefixes24 = Some(nets.prefixes4)
	}
	if nets.v6 > 0 {
		facts.DistinctPrefixes64 = Some(nets.prefixes6)
		facts.ClientIPv6PrefixBits = Some(request.ClientIPv6Bits)
	}
	// Spread or concentrated decides the rule: a site-wide bucket or a
	// per-client zone (perclient.go).
	caught, _ := perClientCaught(ev.Traffic, actor)
	spread := caught < MinLimitCaught
	facts.Spread = spread
	loggedIn := c.Key.LoggedIn.String()
	// What it walked and on which browser versions are its addresses':
	// the readers who share its fingerprint walk their own pages, with
	// assets, on their own versions.
	own := b.walked
	walked := own.walkedCounts()
	fp := FingerprintOf(c.Key)
	fp.UserAgent, fp.Paths = userAgent(c.Key.UA, own.versions[0]), topLabels(walked, 8)
	said := crawlerSummary{Who: crawlerWho{UA: fp.UserAgent, Lang: c.Key.Lang, LoggedIn: loggedIn, NoClientHints: c.Key.NoClientHints}}
	if len(c.Members) > 0 {
		said.Who = crawlerWho{Fingerprints: len(c.Members), Langs: fp.rotating(c.Members, own.versions), LoggedIn: loggedIn}
		said.Who.UserAgents = fp.UserAgents
		facts.Fingerprints = Some(len(c.Members))
	}
	if posts := b.posts(); b.requests > 0 && float64(posts) >= minMethodShare*float64(b.requests) {
		fp.Method = "POST"
	}
	said.Spread, said.Addresses, said.Networks, said.Median, said.MaxPerIP = spread, len(perIP), nets.prefixes(), medianPerIP, maxPerIP
	said.Clients = clients
	said.RoseFrom, said.Peak, said.HasBaseline, said.PHPShare = b.roseFrom10, b.peak10, facts.RoseFromPer10m.OK, facts.PHPTimeShare.V
	said.Start, said.Unseen = b.onset.In(ev.loc()), ev.unseenAt(b.onset)
	said.Paths, said.AssetShare = fp.Paths[:min(3, len(fp.Paths))], b.assetShare
	said.SetApart = facts.setApart()
	conf := 0.6
	if b.assetShare < 0.01 {
		conf += 0.15
	}
	if b.toolShare >= 0.8 {
		conf += 0.1
	}
	if c.Key.NoClientHints {
		conf += 0.1
	}
	var keys []request.ClusterKey
	for _, m := range c.Members {
		keys = append(keys, m.Key)
		one := FingerprintOf(m.Key)
		fp.Members = append(fp.Members, MemberFingerprint{UserAgent: one.UserAgent, AcceptLanguage: one.AcceptLanguage, LoggedIn: one.LoggedIn, SecChUa: one.SecChUa})
	}
	f := Finding{
		Kind: KindCrawlerBurst, Role: RoleTrigger, Start: b.onset, End: b.end, Confidence: round(math.Min(conf, 0.95), 2),
		Facts: facts, Fingerprint: fp, Cluster: &c.Key, Clusters: keys, TopPaths: topPathCounts(walked, 10),
		Routes: b.routes[:min(len(b.routes), maxFindingRoutes)], Estimated: b.estimates(facts),
	}
	f.summarize(Messages.Say("crawler_burst.summary", said))
	return f
}

// crawlerWho is the fingerprint a crawler's summary names: one client's
// (UA, Lang, NoClientHints) or, for an actor joined from several, how many
// (Fingerprints) with their user agents and languages ("" for none).
type crawlerWho struct {
	UA, Lang, LoggedIn string
	NoClientHints      bool
	Fingerprints       int
	UserAgents, Langs  []string
}

// crawlerSummary is what a crawler_burst summary says: who, how its rate
// rose (per 10 minutes) from when, how spread it was, what it walked.
type crawlerSummary struct {
	Who                 crawlerWho
	HasBaseline, Spread bool
	// RoseFrom is the rate the rise started from (RoseFromPer10m).
	RoseFrom, Peak, PHPShare, Median float64
	Start                            time.Time
	Unseen                           *Unseen
	Addresses, Networks, MaxPerIP    int
	// Clients counts the addresses as hosts (client.go); the summary names
	// them when an IPv6 /64 held several addresses.
	Clients    int
	Paths      []string
	AssetShare float64
	SetApart   setApart
}

// setApart is what a crawler finding says of its fingerprint's addresses,
// readers apart, that are not counted in the burst: how many, their
// requests, and why (Left, actor.go). The summary and the explanation say
// it in the same words ("crawler_burst.set_apart", which both include).
type setApart struct {
	Others, OtherRequests int
	Left                  leftOut
}

// estimates marks the burst's figures that a pushdown left estimated.
func (b burst) estimates(facts *CrawlerBurstFacts) []Estimate {
	var out []Estimate
	// The rate the rise started from is the baseline's or the walk's the
	// start stepped up from: estimated as the one it is.
	fromBaseline := b.roseFrom10 == b.baseline10
	if b.notRead {
		figs := []string{"start", "distinct_ips", "requests", "requests_per_ip_median", "requests_per_ip_max", "peak_per_10m"}
		if facts.DistinctPrefixes24.OK {
			figs = append(figs, "distinct_prefixes_24")
		}
		if facts.DistinctPrefixes64.OK {
			figs = append(figs, "distinct_prefixes_64")
		}
		if facts.RoseFromPer10m.OK && !fromBaseline {
			figs = append(figs, "rose_from_per_10m")
		}
		out = append(out, Estimate{Figures: figs, Reason: EstimateNotRead})
	} else if b.startEstimated {
		figs := []string{"start"}
		if facts.RoseFromPer10m.OK && !fromBaseline {
			figs = append(figs, "rose_from_per_10m")
		}
		out = append(out, Estimate{Figures: figs, Reason: EstimateNotRead})
	}
	if b.baselineSampled && facts.BaselinePer10m.OK {
		figs := []string{"baseline_per_10m"}
		if fromBaseline {
			figs = append(figs, "rose_from_per_10m")
		}
		out = append(out, Estimate{Figures: figs, Reason: EstimateBaselineSample})
	}
	if b.routesEstimated != "" {
		// What decided "expensive, uncacheable": the routes' costs and the
		// share of its pages that went to the expensive ones.
		out = append(out, Estimate{Figures: []string{"routes", "uncacheable_share"}, Reason: b.routesEstimated})
	}
	return out
}

// maxFindingRoutes bounds the route templates a finding lists.
const maxFindingRoutes = 12

// walkedCounts names what the addresses walked: by tool label where the
// labels name most of their pages (MediaWiki's special pages and actions, a
// naming hint only: cost was measured per template), else by route
// template.
func (w actorWalked) walkedCounts() map[string]int {
	named := 0
	for l, n := range w.labels {
		switch request.PathClass(l) {
		case request.ClassAsset, request.ClassArticle, request.ClassAPI, request.ClassOther, request.ClassHealth:
		default:
			if l != "(other)" {
				named += n
			}
		}
	}
	if pages := w.requests - w.assets; named*2 >= pages && named > 0 {
		return w.labels
	}
	return w.routes
}

func topLabels(labels map[string]int, n int) []string {
	pcs := topPathCounts(labels, n)
	out := make([]string, len(pcs))
	for i, p := range pcs {
		out[i] = p.Path
	}
	return out
}

func topPathCounts(labels map[string]int, n int) []PathCount {
	out := make([]PathCount, 0, len(labels))
	for l, c := range labels {
		out = append(out, PathCount{Path: l, Requests: c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Requests != out[j].Requests {
			return out[i].Requests > out[j].Requests
		}
		return out[i].Path < out[j].Path
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// windowPHPSeconds sums PHP's time over the window's minutes.
func (ev *Evidence) windowPHPSeconds() float64 {
	total := 0.0
	for m := ev.From.Unix() / 60; m < ev.To.Unix()/60; m++ {
		if mm := ev.Traffic.minutes[m]; mm != nil {
			total += mm.PHPSeconds
		}
	}
	return total
}
