package simulate

// slowDependencyReloads is an outage whose own effects look like a cause: a
// dependency slows down, pages fail, and the people they fail reload again
// and again, some from their phones' mobile data (fresh addresses), some in
// another browser. Requests, addresses and fingerprints all rise, but only
// after the failures began: the rise is the outage's consequence, and the
// slow dependency is the trigger.
func init() { registry["slow-dependency-reloads"] = slowDependencyReloads }

func slowDependencyReloads() Scenario {
	sc := Scenario{
		Name: "slow-dependency-reloads",
		Description: "a WordPress members' blog (login cookies logged): from 14:02 its database answers 12 times slower " +
			"for 25 minutes while arrivals stay flat; readers whose pages fail keep reloading every few seconds (up to thirty times), a third of the " +
			"reloads from another network and some in another browser, so requests, addresses and fingerprints rise " +
			"after the failures began: a consequence, not the trigger",
		From: at(2026, 11, 24, 13, 15, 0), To: at(2026, 11, 24, 15, 15, 0),
		App: AppWordPress,
	}
	siteDefaults(&sc)
	sc.Workers, sc.StartServers, sc.MinSpare, sc.MaxSpare = 8, 4, 2, 4
	sc.Cores = 2
	sc.ReaderSessions = 0.6
	sc.LoggedInShare = 0.75
	sc.SlowDB = &SlowDBSpec{From: at(2026, 11, 24, 14, 2, 0), To: at(2026, 11, 24, 14, 27, 0), WaitFactor: 20, ExtraWaitS: 12, CapS: 30}
	sc.Reloads = &ReloadSpec{Tries: 30, Chance: 0.95, GapMinS: 1, GapMaxS: 4, NewAddress: 0.35, OtherBrowser: 0.15}
	sc.commits = []commit{cmWPInitial, cmWPReadme, cmWPBump}
	return sc
}
