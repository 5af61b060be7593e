package simulate

import "time"

// The week scenario is what `aftermath scan` is tested on: seven days of
// ordinary traffic with a daily and a weekly rhythm, one crawler-backlog
// incident and one legitimate flash crowd on different days. A scheduled scan
// replayed hour by hour over it must flag the crawler before its first 503,
// report the crowd as a surge, and stay quiet the rest of the week.
//
// It is kept small enough for a test to generate in seconds: ordinary traffic
// runs at a fraction of the other scenarios' rates (a quiet wiki), while the
// crawler and the crowd keep theirs, because what they do to 16 workers does
// not scale down with the readers.
func init() {
	registry["week"] = week
}

// WeekStart is the Monday 00:00 KST the week scenario's window starts at.
var WeekStart = at(2026, 10, 19, 0, 0, 0)

// weekly is the relative traffic of each weekday (time.Weekday order, Sunday
// first) of a reference wiki: busiest early in the week, quieter on Friday
// evening and over the weekend. Its amplitude (about +-15%) is what a scan's
// seasonal baseline must absorb without alarming.
var weekly = []float64{0.82, 1.08, 1.1, 1.06, 1.04, 0.96, 0.8}

func week() Scenario {
	sc := Scenario{
		Name: "week",
		Description: "a week (Mon 19 to Sun 25 October 2026, KST) of ordinary traffic with daily and weekly " +
			"seasonality; the reference crawler walks the tools from Wednesday 20:00 and bursts on Thursday 02:15 " +
			"(503s, as crawler-backlog); a flash crowd follows a news link on Saturday 20:05. Give it " +
			"--baseline-hours 72 or more so the first days' scans have a baseline",
		From: WeekStart, To: WeekStart.AddDate(0, 0, 7),
	}
	siteDefaults(&sc)
	// A quiet wiki: a third of the readers of the reference site and fewer
	// search-engine bots, so that a week simulates in seconds.
	sc.ReaderSessions = 0.015
	sc.EditorSessions = 0.001
	sc.BotRate = 0.03
	sc.Weekly = weekly
	sc.HealthTimeoutQueued = true

	c := DefaultCrawler()
	day := WeekStart.AddDate(0, 0, 3) // Thursday
	c.BaselineFrom = day.Add(-4 * time.Hour)
	c.Onset = day.Add(2*time.Hour + 15*time.Minute)
	sc.Crawler = &c

	sc.Crowd = &CrowdSpec{
		Start:       WeekStart.AddDate(0, 0, 5).Add(20*time.Hour + 5*time.Minute), // Saturday
		RampMinutes: 4, PeakSessions: 2.5, DecayMinutes: 22, EndMinutes: 80,
		Titles: []string{"한국시리즈", "2026년_한국시리즈", "가을_야구"},
		Referers: []string{"https://n.news.naver.com/article/001/0014981234", "https://v.daum.net/v/20261024200512345",
			"https://t.co/q7Lm2ZpK9d", "https://www.google.com/"},
	}

	// The configuration of crawler-backlog's night: PHP 8.3 with a 4,096
	// backlog, no read_timeout, and a proxy that cuts queued health checks at
	// health_timeout. Every commit predates the week.
	sc.commits = []commit{initialWith(func(c *SiteConfig) { c.ReadTimeoutS = 0 }), cmLinkWalk, cmReadme, cmCSS, cmBump}
	return sc
}

// seasonalRate is diurnalRate shaped by the weekday too when weekly (seven
// factors, Sunday first) is given; without it, it is diurnalRate itself.
func seasonalRate(begin, end int64, mean float64, weekly []float64) *plf {
	p := diurnalRate(begin, end, mean)
	if len(weekly) != 7 {
		return p
	}
	for i, t := range p.t {
		p.v[i] *= weekly[time.Unix(0, t).In(kst).Weekday()]
	}
	return p
}
