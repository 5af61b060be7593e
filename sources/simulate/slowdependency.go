package simulate

// slowDependencyShortWindow is a recording that holds only minutes: the
// evidence starts at the window's start, so the minutes before the slowdown
// are the only usual time there is, and so few requests fail that no
// failing stretch stands out.
func init() { registry["slow-dependency-short-window"] = slowDependencyShortWindow }

func slowDependencyShortWindow() Scenario {
	sc := Scenario{
		Name: "slow-dependency-short-window",
		Description: "a 15-minute recording of a WordPress blog (no data before it): from 3 minutes in, the database " +
			"answers 20 times slower for 5 minutes while arrivals stay flat; the queue grows, few requests fail",
		From: at(2026, 11, 18, 16, 41, 0), To: at(2026, 11, 18, 16, 56, 0),
		App: AppWordPress,
	}
	siteDefaults(&sc)
	sc.ReaderSessions = 0.35
	sc.NoBaseline = true
	sc.SlowDB = &SlowDBSpec{From: at(2026, 11, 18, 16, 44, 0), To: at(2026, 11, 18, 16, 49, 0), WaitFactor: 20, ExtraWaitS: 0.2}
	sc.commits = []commit{cmWPInitial, cmWPReadme, cmWPBump}
	return sc
}
