package simulate

// A credential-stuffing flood (issue 25): thousands of residential
// addresses, IPv4 and IPv6, each POSTing a few login attempts minutes apart
// under browser user agents drawn from a rotating set, so that no single
// header names the actor and most of its addresses come back after a
// pause, as a reader returning would. What the attempts share is what they
// do: the same two endpoints, by POST, without a page or an asset before,
// at the same time.
func init() { registry["credential-stuffing"] = credentialStuffing }

// stuffingAgents are the flood's user agents and languages: Chrome most,
// as the browsers it imitates are; the Chromium ones send no client hints
// (a script copies the User-Agent only).
var stuffingAgents = []CrawlerAgent{
	{UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36", AcceptLanguage: "en-US,en;q=0.9"},
	{UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36", AcceptLanguage: "en-US,en;q=0.9"},
	{UserAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36", AcceptLanguage: "de-DE,de;q=0.9,en;q=0.8"},
	{UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36", AcceptLanguage: "pt-BR,pt;q=0.9"},
	{UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:127.0) Gecko/20100101 Firefox/127.0", AcceptLanguage: "en-GB,en;q=0.5"},
	{UserAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15", AcceptLanguage: "fr-FR,fr;q=0.9"},
	{UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36 Edg/125.0.0.0", AcceptLanguage: "es-ES,es;q=0.9"},
	{UserAgent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36", AcceptLanguage: ""},
}

// credentialStuffing: the WordPress blog at a quiet evening hour. From
// 21:40 the flood ramps to 15 attempts a second for 40 minutes, about
// 15,000 addresses with 1-4 attempts each, 40% of them IPv6 (a /64 each),
// every attempt ~0.3 s of CPU: four cores hold about 13 a second. Its
// agents are those of ordinary readers too, and the blog's own authors log
// in by POST all evening from their office (a few addresses): the path
// alone does not make a flood.
func credentialStuffing() Scenario {
	sc := wordpressSearchCrawl()
	sc.Name = "credential-stuffing"
	sc.Description = "a WordPress blog: a credential-stuffing flood POSTs /wp-login.php and /xmlrpc.php from about " +
		"15,000 residential IPv4 and IPv6 addresses, 1-4 attempts each minutes apart, under eight rotating browser " +
		"fingerprints, from 21:40; each attempt ~0.3 s of CPU saturates four cores; authors log in as usual"
	sc.Crawler = &CrawlerSpec{
		Agents: stuffingAgents, AgentSwitch: 0.3,
		Tools:     []Tool{ToolWPLogin, ToolWPLogin, ToolWPXMLRPC},
		IPv6Share: 0.4, RequestsPerIP: 1,
		AttemptsMin: 1, AttemptsMax: 4, AttemptGapMinS: 45, AttemptGapMaxS: 420,
		Onset: at(2026, 11, 4, 21, 40, 0),
		Shape: []RateKnot{{3, 15}, {40, 15}, {43, 0}},
	}
	sc.Clients = []ClientSpec{{Name: "authors-login",
		UserAgent: stuffingAgents[0].UserAgent, Accept: AcceptChromium,
		IPs:      []string{"211.45.60.31", "211.45.60.32", "211.45.60.33"},
		Rate:     []RateAt{{at(2026, 11, 4, 9, 0, 0), 0.004}},
		Requests: []ClientRequest{{Weight: 1, Method: "POST", URI: "/wp-login.php", CPUS: 0.3, WaitS: 0.02}},
	}}
	return sc
}
