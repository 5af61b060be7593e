package simulate

import "time"

// poolCutLunch is a pool cut by a configuration change that nothing tests
// until the next busy hour: an office wiki's staff look things up and edit
// over lunch on Monday, as on every weekday, and the pool cut on Saturday
// cannot hold them. No client is new and no page is slower: the load is
// the ordinary one, the change is what made it fail.
func init() { registry["pool-cut-lunch"] = poolCutLunch }

func poolCutLunch() Scenario {
	day := at(2026, 11, 23, 0, 0, 0) // a Monday
	sc := Scenario{
		Name: "pool-cut-lunch",
		Description: "an office wiki: pm.max_children cut from 24 to 6 on Saturday (to leave memory for a search index: 19 workers fit in memory, 24 did not; the 8 cores hold about 10 busy ones); Monday's ordinary lunch peak of " +
			"staff (logged-in editors, every page PHP) needs about 10 workers and fills the 6 from 12:05; 24 would " +
			"have held; users retrying are a consequence",
		From: day.Add(11*time.Hour + 30*time.Minute), To: day.Add(13*time.Hour + 30*time.Minute),
	}
	siteDefaults(&sc)
	sc.Workers, sc.MaxSpare = 24, 8
	sc.Cores = 8
	// The cut's reason is real: the search index holds most of the host's
	// 4 GiB, and the old 24 workers would not fit beside it; 19 would. The
	// CPU binds first: an editor's page keeps about 0.75 of a core busy.
	sc.Processes = &ProcessModel{WorkerRSSMiB: 72, MasterRSSMiB: 28, RequestPeakMiB: 22, MemTotalMiB: 4096, OthersMiB: 2700}
	sc.ReaderSessions = 0.15
	sc.OfficeEditors = []RateAt{
		{day.Add(8 * time.Hour), 0.1}, {day.Add(9*time.Hour + 30*time.Minute), 0.6},
		{day.Add(12*time.Hour + 2*time.Minute), 0.6}, {day.Add(12*time.Hour + 8*time.Minute), 4.5},
		{day.Add(12*time.Hour + 45*time.Minute), 4.5}, {day.Add(13*time.Hour + 5*time.Minute), 0.6},
	}
	cut := commit{at: at(2026, 11, 21, 10, 14, 0), message: "php-fpm: pm.max_children 6 to leave memory for the search index",
		apply: func(c *SiteConfig, _ *repoExtras) { c.MaxChildren = 6 }, cause: true}
	sc.commits = append(wikiHistory(), cut)
	sc.commits[0] = initialWith(func(c *SiteConfig) { c.MaxChildren = 24 })
	return sc
}
