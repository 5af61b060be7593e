package simulate

import "time"

// A crawler on a Nextcloud server's public share links, during a desktop
// client sync storm (issue 25). The server is upgraded at 13:20; the
// desktop clients of the office (their own User-Agent, mirall, from the
// office's and the staff's home addresses) then re-scan their folders
// with PROPFIND for half an hour: heavy, legitimate, and held by the pool.
// At 14:10 a crawler walks public share links (/index.php/s/{token} and
// their zip downloads) and fills the pool; the sync clients, whose
// requests now fail, retry and rise after the failures began: a
// consequence, never the cause. The upgrade changed no setting the
// incident turns on. Caddy's default redacts the Cookie header, so the log
// cannot tell a logged-in user (nc_username) from a visitor.
func init() { registry["nextcloud-share-crawl"] = nextcloudShareCrawl }

var (
	cmNextcloudInitial = appInitial(nextcloudServer, at(2026, 8, 20, 10, 0, 0))
	cmNextcloudReadme  = commit{at: at(2026, 10, 2, 15, 12, 0), message: "README: occ maintenance notes",
		apply: func(_ *SiteConfig, x *repoExtras) {
			x.readme = append(x.readme, "", "Upgrades: occ maintenance:mode --on, pull the image, occ upgrade, --off.")
		}}
	cmNextcloudUpgrade = commit{at: at(2026, 11, 17, 13, 20, 0), message: "Nextcloud 29.0.7 -> 30.0.1",
		apply: func(c *SiteConfig, _ *repoExtras) { c.Image = "nextcloud:30.0.1-fpm" }}
)

// desktopSync is the office's desktop clients: a steady poll all day, a
// re-scan after the upgrade, and retries once the site fails them. Each
// signs every request with its account's app password (HTTP Basic, what
// the desktop client's login flow hands it), so the log shows an
// Authorization header on all of them.
func desktopSync(day time.Time, name, ua string, ips []string, scale float64) ClientSpec {
	h := func(hh, mm int) time.Time {
		return day.Add(time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute)
	}
	return ClientSpec{Name: name, UserAgent: ua, Accept: "*/*", IPs: ips, Consequence: true, Auth: "Basic",
		Rate: []RateAt{
			{h(7, 30), 0.05 * scale}, {h(9, 0), 0.5 * scale},
			{h(13, 21), 0.5 * scale}, {h(13, 24), 2.0 * scale}, {h(13, 48), 2.0 * scale}, {h(13, 55), 0.5 * scale},
			{h(14, 16), 0.5 * scale}, {h(14, 20), 1.6 * scale}, {h(14, 50), 1.6 * scale}, {h(14, 56), 0.5 * scale},
		},
		Requests: []ClientRequest{
			{Weight: 0.7, Method: "PROPFIND", URI: "/remote.php/dav/files/team/", CPUS: 0.05, WaitS: 0.03, Status: 207},
			{Weight: 0.1, Method: "GET", URI: "/ocs/v2.php/cloud/capabilities?format=json", CPUS: 0.03, WaitS: 0.01, JSON: true},
			{Weight: 0.1, Method: "GET", URI: "/ocs/v2.php/apps/notifications/api/v2/notifications?format=json", CPUS: 0.03, WaitS: 0.01, JSON: true},
			{Weight: 0.1, Method: "GET", URI: "/remote.php/dav/files/team/Projects/report-%d.docx", CPUS: 0.03, WaitS: 0.08},
		}}
}

func nextcloudShareCrawl() Scenario {
	day := at(2026, 11, 17, 0, 0, 0) // a Tuesday
	sc := Scenario{
		Name: "nextcloud-share-crawl",
		Description: "a Nextcloud server: upgraded at 13:20, its desktop clients (mirall) re-scan with PROPFIND " +
			"until 13:50 (held); from 14:10 a crawler walks public share links and their zip downloads from " +
			"hundreds of addresses and fills the pool; the desktop clients' retries rise after the failures " +
			"(a consequence); Cookie redacted in the log",
		From: day.Add(13 * time.Hour), To: day.Add(15*time.Hour + 30*time.Minute),
		App: AppNextcloud,
	}
	siteDefaults(&sc)
	sc.ReaderSessions = 0.08
	sc.LoggedInShare = 0.7
	sc.CookieLog = CookieRedacted
	sc.VaryCookieLog = true
	office := []string{"211.45.60.40", "211.45.60.41"}
	var homes []string
	for i := 0; i < 24; i++ {
		homes = append(homes, "118.235."+itoa(10+i*7)+"."+itoa(20+i*3))
	}
	sc.Clients = []ClientSpec{
		desktopSync(day, "desktop-sync-linux", MirallAgent, append(append([]string{}, office...), homes[:8]...), 0.4),
		desktopSync(day, "desktop-sync-windows",
			"Mozilla/5.0 (Windows) mirall/3.13.2 (build 20240801) (Nextcloud, windows-10.0.22631 ClientArchitecture: x86_64 OsArchitecture: x86_64)",
			append(append([]string{}, office...), homes[8:]...), 0.6),
	}
	sc.Crawler = &CrawlerSpec{
		UserAgent:      "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
		AcceptLanguage: "",
		Tools:          []Tool{ToolNCShare, ToolNCShare, ToolNCShareZip},
		RequestsPerIP:  3, SharedPrefixShare: 0.25,
		Onset:   day.Add(14*time.Hour + 10*time.Minute),
		Shape:   []RateKnot{{3, 12}, {36, 12}, {38, 0}},
		Retries: 1, RetryMinS: 2, RetryMaxS: 8,
	}
	sc.commits = []commit{cmNextcloudInitial, cmNextcloudReadme, cmNextcloudUpgrade}
	return sc
}
