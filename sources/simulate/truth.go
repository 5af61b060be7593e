package simulate

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/failure"
)

// Truth is truth.json: what happened in the run, and what a correct analysis
// of the bundle finds. Detectors never read it; tests compare them with it.
type Truth struct {
	Source    string `json:"source"`
	Scenario  string `json:"scenario"`
	Generator string `json:"generator"`
	// Varied lists what the seed changed from the scenario as written
	// (vary.go); empty for seed 1.
	Varied []string `json:"varied,omitempty"`
	// CookieLog is how the access log keeps the Cookie header: "logged"
	// (as sent), "redacted" (Caddy's REDACTED) or "omitted".
	CookieLog          string           `json:"cookie_log"`
	Window             TruthWindow      `json:"window"`
	Baseline           TruthWindow      `json:"baseline"`
	Phases             TruthPhases      `json:"phases"`
	StatusCounts       map[string]int64 `json:"status_counts"`
	WindowStatusCounts map[string]int64 `json:"window_status_counts"`
	Peak503PerMinute   int              `json:"peak_503_per_minute"`
	Peak503At          string           `json:"peak_503_at,omitempty"`
	Crawler            *TruthCrawler    `json:"crawler,omitempty"`
	Pool               TruthPool        `json:"pool"`
	Health             TruthHealth      `json:"health"`
	Requests           TruthRequests    `json:"requests"`
	ExpectedFindings   []Expected       `json:"expected_findings"`
	ForbiddenFindings  []string         `json:"forbidden_findings"`
	ConfigChange       *TruthChange     `json:"config_change,omitempty"`
	// Processes is what php-fpm's per-process series measure, for a
	// scenario that has them.
	Processes *TruthProcesses `json:"processes,omitempty"`
	// Trigger is what a correct analysis ranks first as the cause; absent
	// when nothing needed a cause (a legitimate crowd).
	Trigger *TruthTrigger `json:"trigger,omitempty"`
	// FailingStretches are the stretches of the window where clients were
	// failed beyond the usual, from the access log as an analysis sees it:
	// requests placed by arrival (log time minus duration) that got a 5xx or
	// a 429 or were answered after the site's client timeout, grouped into
	// stretches by failure.Stretches (the analysis's own definition) against
	// the minutes before the window. Separate stretches are separate
	// incidents.
	FailingStretches []TruthStretch `json:"failing_stretches"`
	// Clients are the scenario's scheduled clients (API, sync, feed readers,
	// scrapers): context whose traffic an analysis must not mistake for the
	// trigger.
	Clients []TruthClient `json:"clients,omitempty"`
	// Notes explain what the truth leaves out and why (e.g. a change that
	// looks like a cause but played no part).
	Notes []string `json:"notes,omitempty"`
}

// TruthTrigger is the cause a correct analysis names first.
type TruthTrigger struct {
	// Kind is the finding kind (crawler_burst, service_time_regression,
	// idle_pinning).
	Kind string `json:"kind"`
	// UserAgent is the triggering client's, for a client trigger.
	UserAgent string `json:"user_agent,omitempty"`
	// Onset is when the cause began (Phases.Onset).
	Onset string `json:"onset"`
}

// TruthStretch is one stretch of failed clients (by arrival minute).
type TruthStretch struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Failed int64  `json:"failed"`
}

// TruthClient is one scheduled client and its weight.
type TruthClient struct {
	Name      string `json:"name"`
	UserAgent string `json:"user_agent"`
	// Role is "context" (present, not a cause), "consequence" (it rose
	// after the failures began, because of them: never a cause) or
	// "trigger".
	Role     string `json:"role"`
	Requests int64  `json:"requests"`
	// PHPTimeShare is its share of the PHP time of requests that ended in
	// the window.
	PHPTimeShare float64 `json:"php_time_share"`
}

// failingStretches finds the failing stretches of minutes [from, to) from
// per-minute failures and access-log lines by arrival (index i is minute
// begin+i), by the one definition the analysis finds them by
// (failure.Stretches), the usual learnt from every minute before from: a
// rate limit refusing a slow crawler all day, a stray slow answer, are what
// the site had as often in its ordinary hours, not the incident's. Each is
// {first minute, last minute + 1, failures}.
func failingStretches(failed, logged []int32, from, to int) [][3]int64 {
	from, to = max(from, 0), min(to, len(failed))
	var usual failure.Usual
	if from > 0 {
		base, requests := make([]int, from), 0
		for i := range from {
			base[i] = int(failed[i])
			requests += int(logged[i])
		}
		usual = failure.UsualOf(base, requests)
	}
	at := func(m int64) (int, int) { return int(failed[m]), int(logged[m]) }
	var out [][3]int64
	for _, s := range failure.Stretches(failure.Minutes{First: int64(from), Last: int64(to), At: at}, usual) {
		out = append(out, [3]int64{s.Start, s.End, int64(s.Failed)})
	}
	return out
}

// TruthWindow is a time range, RFC 3339 UTC.
type TruthWindow struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// TruthPhases are the moments of the incident (empty when they did not happen).
type TruthPhases struct {
	// Onset is when the cause began (crawl burst, crowd, slow database).
	Onset string `json:"onset,omitempty"`
	// Saturation is the first scrape (from an hour before the window) with every worker busy.
	Saturation string `json:"saturation,omitempty"`
	// First503 is the first 503 inside the window.
	First503 string `json:"first_503,omitempty"`
	// QueueFull is the first scrape with the listen queue at listen.backlog.
	QueueFull string `json:"queue_full,omitempty"`
	// Peak is the start of the minute with the most 5xx inside the window.
	Peak string `json:"peak,omitempty"`
	// End is when the cause ended (the crawl faded out, the database recovered).
	End string `json:"end,omitempty"`
	// LastError is the last 5xx inside the window.
	LastError string `json:"last_5xx,omitempty"`
}

// TruthCrawler is what the crawler did.
type TruthCrawler struct {
	Requests           int64  `json:"requests"`
	RequestsInWindow   int64  `json:"requests_in_window"`
	Retries            int64  `json:"retries"`
	DistinctIPs        int64  `json:"distinct_ips"`
	DistinctPrefixes24 *int64 `json:"distinct_prefixes_24,omitempty"`
	DistinctPrefixes64 *int64 `json:"distinct_prefixes_64,omitempty"`
	// Clients counts the actor's clients as a per-client count should:
	// IPv4 addresses one by one, IPv6 addresses collapsed to their /64 (a
	// household or a server is given a whole /64 and may send from any
	// address in it).
	Clients        int64        `json:"clients"`
	Burst10m       TruthSpan    `json:"burst_10m"`
	Window         TruthSpan    `json:"window"`
	BaselinePer10m int64        `json:"baseline_per_10m"`
	PeakPer10m     int64        `json:"peak_per_10m"`
	Per10m         []TruthCount `json:"per_10m"`
	// PHPPer10m counts the crawler's requests that PHP answered (what got past
	// the proxy), by the 10 minutes their access-log line falls in.
	PHPPer10m     []TruthCount      `json:"php_per_10m"`
	PeakPHPPer10m int64             `json:"peak_php_per_10m"`
	Fingerprint   map[string]string `json:"fingerprint"`
	Tools         []Tool            `json:"tools"`
}

// TruthSpan counts the crawler's requests and addresses in a time range.
type TruthSpan struct {
	From               string `json:"from"`
	To                 string `json:"to"`
	Requests           int64  `json:"requests"`
	DistinctIPs        int64  `json:"distinct_ips"`
	DistinctPrefixes24 *int64 `json:"distinct_prefixes_24,omitempty"`
	DistinctPrefixes64 *int64 `json:"distinct_prefixes_64,omitempty"`
}

// TruthCount is a count in a 10-minute bucket starting at From.
type TruthCount struct {
	From  string `json:"from"`
	Count int64  `json:"count"`
}

// TruthPool is php-fpm's side.
type TruthPool struct {
	Workers         int     `json:"workers"`
	Backlog         int     `json:"backlog"`
	QueuePeak       int     `json:"queue_peak"`
	QueuePeakAt     string  `json:"queue_peak_at,omitempty"`
	ListenOverflows int64   `json:"listen_overflows"`
	CPUPeakPct      float64 `json:"cpu_peak_pct"`
	CPUPeakAt       string  `json:"cpu_peak_at,omitempty"`
	// QueueByMinute is phpfpm_listen_queue at each whole-minute scrape of the window.
	QueueByMinute []TruthCount `json:"queue_by_minute"`
}

// TruthHealth is Caddy's active health check.
type TruthHealth struct {
	Failures        int64   `json:"failures"`
	DownTransitions int64   `json:"down_transitions"`
	DownSeconds     float64 `json:"down_seconds"`
	FirstDown       string  `json:"first_down,omitempty"`
	// FirstFailure is the first failed check from an hour before the window.
	FirstFailure string `json:"first_failure,omitempty"`
}

// TruthRequests counts client requests by class.
type TruthRequests struct {
	Sent            map[string]int64 `json:"sent"`
	Abandoned       map[string]int64 `json:"abandoned_php"`
	ClientTimeouts  int64            `json:"client_timeouts"`
	SelfAPICalls    int64            `json:"self_api_calls"`
	NewItemLong     int64            `json:"newitem_waits_over_20s"`
	FirstNewItemAt  string           `json:"first_newitem_long_at,omitempty"`
	InFlightAtEnd   int              `json:"in_flight_at_end"`
	AccessLogLines  int64            `json:"access_log_lines"`
	AccessLogBytes  int64            `json:"access_log_bytes"`
	TruthCSVRows    int64            `json:"truth_csv_rows"`
	TruthCSVColumns string           `json:"truth_csv_columns"`
}

// Expected is a finding a correct analysis must (Must) or may report.
type Expected struct {
	Kind string `json:"kind"`
	Must bool   `json:"must"`
}

// TruthChange is the configuration change a correct analysis blames.
type TruthChange struct {
	Commit  string `json:"commit"`
	Time    string `json:"time"`
	File    string `json:"file"`
	Key     string `json:"key"`
	Old     string `json:"old"`
	New     string `json:"new"`
	Message string `json:"message"`
}

func rfc(ns int64) string {
	if ns == 0 {
		return ""
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}

func codes(m map[int]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		out[strconv.Itoa(k)] = v
	}
	return out
}

func (s *sim) truth(sc *Scenario, o Options, commits []repoCommit) Truth {
	st := s.st
	t := Truth{
		Source: "aftermath simulate (discrete-event model of Caddy 2.11 + php-fpm)", Scenario: sc.Name,
		Generator:          generator(o),
		Window:             TruthWindow{rfc(sc.From.UnixNano()), rfc(sc.To.UnixNano())},
		Baseline:           TruthWindow{rfc(s.begin), rfc(sc.From.UnixNano())},
		StatusCounts:       codes(st.status),
		WindowStatusCounts: codes(st.winStatus),
	}
	// phases
	ph := &t.Phases
	var end int64
	switch {
	case sc.Crawler != nil:
		ph.Onset, end = rfc(sc.Crawler.Onset.UnixNano()), sc.Crawler.End().UnixNano()
	case sc.Crowd != nil:
		ph.Onset, end = rfc(sc.Crowd.Start.UnixNano()), sc.Crowd.Start.Add(minutes(sc.Crowd.EndMinutes)).UnixNano()
	case sc.SlowDB != nil:
		ph.Onset, end = rfc(sc.SlowDB.From.UnixNano()), sc.SlowDB.To.UnixNano()
	case sc.Pinning != nil:
		ph.Onset, end = rfc(sc.Pinning.From.UnixNano()), sc.Pinning.To.Add(time.Duration(sc.Pinning.HoldS*float64(time.Second))).UnixNano()
	case sc.CachePurge != nil:
		p := sc.CachePurge
		ph.Onset, end = rfc(p.At.UnixNano()), p.At.Add(minutes(p.RecoverMinutes)).UnixNano()
	}
	ph.End = rfc(end)
	ph.Saturation, ph.First503, ph.QueueFull, ph.LastError = rfc(st.satAt), rfc(st.first503), rfc(st.queueFullAt), rfc(st.last5xx)
	from := int((sc.From.UnixNano() - s.begin) / (60 * second))
	peak5xx, peakAt, peak503, peak503At := int32(0), -1, int32(0), -1
	for i := max(from, 0); i < len(st.minutes); i++ {
		m := st.minutes[i]
		if n := m.s502 + m.s503 + m.s504; n > peak5xx {
			peak5xx, peakAt = n, i
		}
		if m.s503 > peak503 {
			peak503, peak503At = m.s503, i
		}
	}
	minute := func(i int) int64 { return s.begin + int64(i)*60*second }
	if peakAt >= 0 {
		ph.Peak = rfc(minute(peakAt))
	}
	t.Peak503PerMinute = int(peak503)
	if peak503At >= 0 {
		t.Peak503At = rfc(minute(peak503At))
	}

	// crawler
	if c := sc.Crawler; c != nil && s.crawlerQ != nil {
		addrs, all := s.crawlerQ.distinctAddrs()
		tc := &TruthCrawler{Requests: st.crawler, RequestsInWindow: st.window.reqs, Retries: st.crawlerRetries,
			DistinctIPs: addrs, Tools: c.Tools,
			Fingerprint: map[string]string{"user_agent": c.UserAgent, "accept_language": c.AcceptLanguage,
				"logged_in": strconv.FormatBool(c.LoggedIn), "sec_ch_ua": strconv.FormatBool(c.SecChUa),
				"ip_family": map[bool]string{false: "ipv4", true: "ipv6"}[c.IPv6]}}
		if len(c.Agents) > 0 {
			tc.Fingerprint["user_agent"], tc.Fingerprint["accept_language"] = c.Agents[0].UserAgent, ""
			tc.Fingerprint["agents"] = strconv.Itoa(len(c.Agents))
		}
		if c.IPv6Share > 0 {
			tc.Fingerprint["ip_family"] = "ipv4+ipv6"
		}
		span := func(d distinct) TruthSpan {
			sp := TruthSpan{From: rfc(d.from), To: rfc(d.to), Requests: d.reqs, DistinctIPs: d.ips}
			p := d.pfx
			if c.IPv6 {
				sp.DistinctPrefixes64 = &p
			} else {
				sp.DistinctPrefixes24 = &p
			}
			return sp
		}
		if c.IPv6 {
			tc.DistinctPrefixes64 = &all
		} else {
			tc.DistinctPrefixes24 = &all
		}
		tc.Clients = s.crawlerQ.clients()
		tc.Burst10m, tc.Window = span(st.burst), span(st.window)
		onsetBucket := int((c.Onset.UnixNano() - s.begin) / (600 * second))
		for i, n := range st.crawler10 {
			if n > tc.PeakPer10m {
				tc.PeakPer10m = n
			}
			if i == onsetBucket-1 {
				tc.BaselinePer10m = n
			}
			if b := s.begin + int64(i)*600*second; b >= sc.From.UnixNano() && b < sc.To.UnixNano() {
				tc.Per10m = append(tc.Per10m, TruthCount{From: rfc(b), Count: n})
				tc.PHPPer10m = append(tc.PHPPer10m, TruthCount{From: rfc(b), Count: st.crawlerPHP10[i]})
				tc.PeakPHPPer10m = max(tc.PeakPHPPer10m, st.crawlerPHP10[i])
			}
		}
		t.Crawler = tc
	}

	cfg, _ := sc.configAt(sc.From)
	t.Pool = TruthPool{Workers: sc.Workers, Backlog: cfg.Backlog, QueuePeak: st.queuePeak, QueuePeakAt: rfc(st.queuePeakAt),
		ListenOverflows: s.fpm.overflows, CPUPeakPct: s.metrics.cpuPeak, CPUPeakAt: rfc(s.metrics.cpuPeakAt),
		QueueByMinute: st.winQueue}
	t.Processes = s.truthProcesses()
	if st.downSince != 0 {
		st.downNS += s.end - st.downSince
	}
	t.Health = TruthHealth{Failures: st.hcFails, DownTransitions: st.downs,
		DownSeconds: float64(st.downNS) / 1e9, FirstDown: rfc(st.firstDown), FirstFailure: rfc(st.firstFail)}
	rq := TruthRequests{Sent: map[string]int64{}, Abandoned: map[string]int64{}, ClientTimeouts: st.gaveUp,
		SelfAPICalls: st.selfAPI, NewItemLong: st.newItemLong, FirstNewItemAt: rfc(st.firstNewItem),
		InFlightAtEnd:  s.fpm.queueLen() + s.fpm.active,
		AccessLogLines: s.out.acc.lines, AccessLogBytes: s.out.acc.raw,
		TruthCSVRows: s.out.truth.lines - 1, TruthCSVColumns: truthHeader}
	for c, n := range st.classSent {
		if n > 0 && class(c) != clsHealth {
			rq.Sent[class(c).String()] = n
		}
	}
	for c, n := range st.abandoned {
		if n > 0 {
			rq.Abandoned[class(c).String()] = n
		}
	}
	t.Requests = rq

	// findings a correct analysis must or may report, from what happened
	win5xx := st.winStatus[502] + st.winStatus[503] + st.winStatus[504]
	var abandonedAll int64
	for _, n := range st.abandoned {
		abandonedAll += n
	}
	var cause *repoCommit
	for i := range commits {
		if commits[i].cause {
			cause = &commits[i]
		}
	}
	// A backlog increase can only be the cause when the queue went past the old
	// backlog: when a health check cut at its timeout keeps the queue near ten
	// seconds of work, the old backlog would have done the same.
	if cause != nil {
		for _, ch := range cause.changes {
			old, err := strconv.Atoi(ch.Old)
			if ch.Key == "listen.backlog" && err == nil && st.queuePeak <= old {
				t.Notes = append(t.Notes, fmt.Sprintf("%s %s -> %s (%s, commit %.12s) played no part: the listen queue "+
					"peaked at %d, never past the old backlog of %d", ch.Key, ch.Old, ch.New, cause.message, cause.hash, st.queuePeak, old))
				cause = nil
				break
			}
		}
	}
	add := func(kind string, must bool) { t.ExpectedFindings = append(t.ExpectedFindings, Expected{kind, must}) }
	forbid := func(kind string) { t.ForbiddenFindings = append(t.ForbiddenFindings, kind) }
	scraper := false
	for _, c := range sc.Clients {
		scraper = scraper || c.Scraper
	}
	switch {
	case sc.Crawler != nil:
		add("crawler_burst", true)
	case !scraper:
		forbid("crawler_burst")
	}
	if st.satAt != 0 {
		add("worker_saturation", true)
	}
	if st.queuePeak >= 50 || st.queueFullAt != 0 {
		add("listen_queue_overflow", true)
	}
	switch {
	case st.firstDown != 0:
		add("healthcheck_starved", true)
	case st.satAt != 0 && cfg.ReadTimeoutS == 0:
		add("healthcheck_starved", false) // the silent case: no timeout applies, say so
	default:
		forbid("healthcheck_starved")
	}
	if win5xx+st.winStatus[429] >= 100 {
		add("upstream_errors", true)
	}
	if abandonedAll >= 50 {
		add("client_abandoned_work", true)
	}
	if st.selfAPI >= 20 && st.satAt != 0 {
		add("self_amplification", true)
	}
	if len(t.Notes) > 0 && cause == nil {
		forbid("config_change")
	}
	if cause != nil && (win5xx > 0 || st.satAt != 0) {
		add("config_change", true)
		ch := cause.changes[0]
		t.ConfigChange = &TruthChange{Commit: cause.hash, Time: rfc(cause.at.UnixNano()), File: ch.File, Key: ch.Key,
			Old: ch.Old, New: ch.New, Message: cause.message}
	}
	if sc.SlowDB != nil && (win5xx > 0 || st.satAt != 0) {
		add("service_time_regression", true)
	}
	add("idle_pinning", sc.Pinning != nil)

	t.Trigger = s.trigger(sc, ph.Onset)
	fromMin := int((sc.From.UnixNano() - s.begin) / (60 * second))
	toMin := int((sc.To.UnixNano() - s.begin) / (60 * second))
	t.FailingStretches = []TruthStretch{}
	for _, fs := range failingStretches(st.failedByArrival, st.loggedByArrival, fromMin, toMin) {
		t.FailingStretches = append(t.FailingStretches, TruthStretch{From: rfc(minute(int(fs[0]))), To: rfc(minute(int(fs[1]))), Failed: fs[2]})
	}
	for i, c := range sc.Clients {
		tc := TruthClient{Name: c.Name, UserAgent: c.UserAgent, Role: "context", Requests: st.clientSent[i]}
		switch {
		case t.Trigger != nil && t.Trigger.UserAgent == c.UserAgent:
			tc.Role = "trigger"
		case c.Consequence:
			tc.Role = "consequence"
		}
		if st.phpSeconds > 0 {
			tc.PHPTimeShare = math.Round(st.clientPHPSeconds[i]/st.phpSeconds*1e5) / 1e5
		}
		t.Clients = append(t.Clients, tc)
	}
	if t.ForbiddenFindings == nil {
		t.ForbiddenFindings = []string{}
	}
	return t
}

// trigger is the cause a correct analysis ranks first: the scenario's own
// statement, else the crawler, else a slow database, else pinning.
func (s *sim) trigger(sc *Scenario, onset string) *TruthTrigger {
	switch {
	case sc.Trigger != "":
		return &TruthTrigger{Kind: sc.Trigger, Onset: onset}
	case sc.Crawler != nil:
		ua := sc.Crawler.UserAgent
		if ua == "" && len(sc.Crawler.Agents) > 0 {
			// A rotating crawler is named by its most used agent, the first.
			ua = sc.Crawler.Agents[0].UserAgent
		}
		return &TruthTrigger{Kind: "crawler_burst", UserAgent: ua, Onset: onset}
	case sc.SlowDB != nil:
		return &TruthTrigger{Kind: "service_time_regression", Onset: onset}
	case sc.Pinning != nil:
		return &TruthTrigger{Kind: "idle_pinning", Onset: onset}
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("simulate: %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	return nil
}
