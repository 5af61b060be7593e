package simulate

// cacheStampede is a release whose post-deploy script purges the page cache
// (and the object cache with it): arrivals stay as they were, but the
// pages the cache answered now reach PHP, cold, and fill the pool until the
// cache refills. The trigger is the cache emptying; the release did it.
func init() { registry["cache-stampede"] = cacheStampede }

func cacheStampede() Scenario {
	release := at(2026, 11, 26, 11, 1, 0)
	sc := Scenario{
		Name: "cache-stampede",
		Description: "a WordPress blog logging Cache-Status: a release at 11:01 adds 'wp cache flush' to the post-deploy " +
			"script; the page cache's hit ratio falls from 91% to 30% and climbs back over 45 minutes while arrivals " +
			"stay flat; cold renders fill the 4 workers (503/504)",
		From: at(2026, 11, 26, 10, 15, 0), To: at(2026, 11, 26, 12, 15, 0),
		App: AppWordPress,
	}
	siteDefaults(&sc)
	sc.Workers, sc.StartServers, sc.MinSpare, sc.MaxSpare = 4, 2, 1, 3
	sc.Cores = 2
	sc.ReaderSessions = 2.5
	sc.CacheStatus = "wpsc"
	sc.Trigger = "cache_collapse"
	sc.CachePurge = &CachePurgeSpec{At: release.Add(deployDelay), HitFloor: 0.3, RecoverMinutes: 45, ColdFactor: 50}
	purge := commit{at: release, message: "Release 2026.11.26: flush caches after deploy",
		apply: func(c *SiteConfig, _ *repoExtras) {
			c.DeployHook = "#!/bin/sh\nset -e\nwp core update-db\nwp cache flush\nwp super-cache flush\n"
		}, cause: true}
	sc.commits = []commit{cmWPInitial, cmWPReadme, cmWPBump, purge}
	return sc
}
