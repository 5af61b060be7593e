package simulate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
)

// Summary is what a run wrote and the headline figures of its ground truth.
type Summary struct {
	Scenario string
	Seed     int64
	Out      string
	// Lines and Bytes of the access log (Bytes before compression).
	Lines int64
	Bytes int64
	// Status counts every access-log line by status; WindowStatus only those
	// logged inside the incident window.
	Status       map[int]int64
	WindowStatus map[int]int64
	// Files are the bundle's files (the config repository as one entry) and
	// their sizes on disk.
	Files   map[string]int64
	Truth   Truth
	Elapsed time.Duration
}

// TotalBytes is the bundle's size on disk.
func (s Summary) TotalBytes() int64 {
	var n int64
	for _, b := range s.Files {
		n += b
	}
	return n
}

func (o *Options) normalize() error {
	if o.Scale == 0 {
		o.Scale = 1
	}
	if o.BaselineHours == 0 {
		o.BaselineHours = 24
	}
	if o.Scale < 0 || o.BaselineHours < 0 || math.IsNaN(o.Scale) || math.IsNaN(o.BaselineHours) {
		return fmt.Errorf("simulate: scale and baseline hours must be positive (got %v, %v)", o.Scale, o.BaselineHours)
	}
	if o.Out == "" {
		return fmt.Errorf("simulate: no output directory")
	}
	return nil
}

// Run simulates o.Scenario and writes its bundle to o.Out.
func Run(ctx context.Context, o Options) (Summary, error) {
	t0 := time.Now()
	if err := o.normalize(); err != nil {
		return Summary{}, err
	}
	sc, err := Lookup(o.Scenario)
	if err != nil {
		return Summary{}, err
	}
	varied := sc.varyBySeed(o.Seed)
	if o.Crawler != nil {
		c := *o.Crawler
		c.Tools = append([]Tool(nil), c.Tools...)
		if err := c.validate(); err != nil {
			return Summary{}, fmt.Errorf("simulate %s: %w", sc.Name, err)
		}
		sc.Crawler = &c
	}
	if err := prepareDir(o.Out); err != nil {
		return Summary{}, err
	}
	if err := bundle.WriteManifest(o.Out, &bundle.Manifest{Window: bundle.Window{From: sc.From.UTC(), To: sc.To.UTC()}}); err != nil {
		return Summary{}, fmt.Errorf("simulate: %w", err)
	}
	commits, err := writeRepo(ctx, &sc, filepath.Join(o.Out, bundle.ChangesDir, "config"))
	if err != nil {
		return Summary{}, err
	}
	nchanges, err := writeChanges(filepath.Join(o.Out, bundle.ChangesDir, "changes.yaml"), commits)
	if err != nil {
		return Summary{}, err
	}

	s, err := newSim(&sc, o)
	if err != nil {
		return Summary{}, err
	}
	runErr := s.run(ctx.Err)
	closeErr := s.out.close()
	if runErr != nil {
		return Summary{}, fmt.Errorf("simulate %s: %w", sc.Name, runErr)
	}
	if closeErr != nil {
		return Summary{}, closeErr
	}

	queries := []bundle.Query{
		s.query("access/access.log.gz", "Caddy access log (JSON), every request to "+sc.host(), s.out.acc.lines, s.out.acc.raw, 0),
		s.query("logs/caddy.log.gz", "Caddy's own log: health checker and error log", s.out.caddy.lines, s.out.caddy.raw, 0),
		s.query("logs/php-fpm.log", "php-fpm error log (pool www, UTC)", s.out.fpmN, 0, 0),
	}
	for _, mf := range []*metricFile{&s.metrics.fpm, &s.metrics.caddy, &s.metrics.cw, &s.metrics.node, &s.metrics.proc} {
		if len(mf.fams) == 0 {
			continue // process-exporter's file, in a scenario without it
		}
		n, ns, err := mf.write(o.Out, o.gzipLevel())
		if err != nil {
			return Summary{}, err
		}
		queries = append(queries, s.query(mf.path, "OpenMetrics: "+familyNames(mf), n, 0, ns))
	}
	queries = append(queries,
		s.query("changes/changes.yaml", "deploy log of configuration changes", int64(nchanges), 0, 0),
		s.query("changes/config", "git repository of the site's configuration", int64(len(commits)), 0, 0),
	)
	truth := s.truth(&sc, o, commits)
	truth.Varied = varied
	truth.CookieLog = sc.CookieLog.String()
	if err := writeJSON(filepath.Join(o.Out, "truth.json"), truth); err != nil {
		return Summary{}, err
	}
	gt := "ground truth of the simulation: not evidence, no detector reads it"
	queries = append(queries, s.query("truth.json", gt, 0, 0, 0),
		s.query("truth-requests.csv.gz", gt+" (one row per client request)", s.out.truth.lines-1, s.out.truth.raw, 0))

	winCfg, _ := sc.configAt(sc.From)
	// pm.max_children as the incident found it (a change inside the window
	// counts); for every scenario without such a change, Workers.
	endCfg, _ := sc.configAt(sc.To)
	var baseline *bundle.Window
	if !sc.NoBaseline {
		baseline = &bundle.Window{From: time.Unix(0, s.begin).UTC(), To: sc.From.UTC()}
	}
	m := &bundle.Manifest{
		Window:   bundle.Window{From: sc.From.UTC(), To: sc.To.UTC()},
		Baseline: baseline,
		Timezone: sc.zone(),
		Site: sources.Site{
			Workers: sc.maxChildren(endCfg), Backlog: winCfg.Backlog, HealthURI: "/healthz.php",
			HealthIntervalS: sc.HealthIntervalS, HealthTimeoutS: sc.HealthTimeoutS, HealthFails: sc.HealthFails,
			ReadTimeoutS: winCfg.ReadTimeoutS, LoggedInCookie: sc.loggedInCookie(), ClientTimeoutS: sc.ClientTimeoutS,
		},
		Queries:   queries,
		Generator: generator(o),
	}
	if err := bundle.WriteManifest(o.Out, m); err != nil {
		return Summary{}, fmt.Errorf("simulate: %w", err)
	}
	files, err := sizes(o.Out)
	if err != nil {
		return Summary{}, err
	}
	return Summary{
		Scenario: sc.Name, Seed: o.Seed, Out: o.Out,
		Lines: s.out.acc.lines, Bytes: s.out.acc.raw,
		Status: s.st.status, WindowStatus: s.st.winStatus,
		Files: files, Truth: truth, Elapsed: time.Since(t0),
	}, nil
}

func generator(o Options) string {
	g := "aftermath simulate " + o.Scenario + " seed=" + strconv.FormatInt(o.Seed, 10) +
		" scale=" + strconv.FormatFloat(o.Scale, 'g', -1, 64) +
		" baseline_hours=" + strconv.FormatFloat(o.BaselineHours, 'g', -1, 64)
	if o.Crawler != nil {
		g += " crawler=custom"
	}
	return g
}

func (s *sim) query(file, what string, lines, raw int64, nseries int) bundle.Query {
	return bundle.Query{Source: "simulate", Query: "simulate " + s.sc.Name + ": " + what,
		From: time.Unix(0, s.begin).UTC(), To: time.Unix(0, s.end).UTC(), File: file,
		Lines: lines, Series: nseries, Bytes: raw, Complete: true}
}

func familyNames(mf *metricFile) string {
	n := ""
	for i, f := range mf.fams {
		if i > 0 {
			n += ", "
		}
		n += f.name
	}
	return n
}

// prepareDir makes the bundle directory, refusing to mix a new bundle into a
// non-empty directory.
func prepareDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err == nil && len(entries) > 0 {
		return fmt.Errorf("simulate: %s is not empty", dir)
	}
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("simulate: %w", err)
	}
	for _, sub := range []string{bundle.AccessDir, bundle.MetricsDir, bundle.ChangesDir, bundle.LogsDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return fmt.Errorf("simulate: %w", err)
		}
	}
	return nil
}

// sizes lists the bundle's files with their sizes; the config repository
// counts as one entry.
func sizes(dir string) (map[string]int64, error) {
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		key := rel
		if strings.HasPrefix(rel, filepath.Join(bundle.ChangesDir, "config")+string(filepath.Separator)) {
			key = filepath.Join(bundle.ChangesDir, "config") + "/"
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[key] += info.Size()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	return out, nil
}

// newSim sets up the site as it stands when the simulation begins and starts
// every traffic generator.
func newSim(sc *Scenario, o Options) (*sim, error) {
	from := sc.From.UnixNano()
	begin := from - int64(o.BaselineHours*float64(time.Hour))
	if sc.NoBaseline {
		begin = from
	}
	begin -= begin % (60 * second)
	end := sc.To.UnixNano()
	s := &sim{sc: sc, begin: begin, end: end, now: begin, scale: o.Scale,
		rng:     rand.New(rand.NewPCG(uint64(o.Seed), 1)),
		st:      newStats(begin, end, from, end),
		metrics: newMetricStore(sc.Cores),
	}
	s.w = &world{titles: newTitles(4000), names: newNames(), bots: botProfiles(),
		rng: rand.New(rand.NewPCG(uint64(o.Seed), 2)), browsers: browsers,
		vrng: rand.New(rand.NewPCG(uint64(o.Seed), 3)), ipv6Share: sc.ReaderIPv6Share}
	if sc.ReaderChrome != "" {
		s.w.browsers = make([]ReaderBrowser, len(readerBrowsers))
		for i, b := range readerBrowsers {
			s.w.browsers[i] = b.WithChrome(sc.ReaderChrome)
		}
	}
	s.selfProf = &profile{ua: "MediaWiki/1.41.1", proto: "HTTP/1.1", alpn: "http/1.1"}
	s.cpu.cores = float64(sc.Cores)
	s.cpu.last = begin
	s.lport = uint16(32768 + s.rng.IntN(20000)&^1)
	var err error
	if s.out, err = openOutputs(o.Out, o.gzipLevel()); err != nil {
		return nil, err
	}

	// The configuration in force, and php-fpm as it has been running since the
	// last deploy that restarted it.
	cfg, _ := sc.configAt(time.Unix(0, begin))
	s.cfg = cfg
	s.setCaddyConfig(cfg)
	s.healthy = true
	started := sc.commits[0].at
	for _, cm := range sc.commits {
		if cm.at.Add(deployDelay).UnixNano() > begin {
			break
		}
		var a, b SiteConfig
		var x repoExtras
		a, _ = sc.configAt(cm.at.Add(deployDelay - time.Second))
		b = a
		cm.apply(&b, &x)
		if a.Backlog != b.Backlog || a.Image != b.Image {
			started = cm.at
		}
	}
	f := &s.fpm
	f.backlog = cfg.Backlog
	f.maxChildren = sc.maxChildren(cfg)
	f.started = started.Add(deployDelay + 4*time.Second).UnixNano()
	f.accepted = (begin - f.started) / second * 11 / 10
	f.maxQueue, f.maxActive, f.spawnRate = 3, 12, 1
	f.nextPid = 6
	for range sc.StartServers {
		f.spawn()
	}
	s.metrics.nodeBoot = float64(sc.Cores) * float64(begin-f.started+86400*second) / 1e9

	// Timers: Caddy's health ticker, php-fpm's maintenance, the scrapes, deploys.
	sec0 := begin + second
	s.push(sec0+799*milli, evHealthTick, nil, nil, 0, 0)
	s.push(sec0+313*milli, evFPMTick, nil, nil, 0, 0)
	s.push(begin+15*second-begin%(15*second), evSample, nil, nil, 0, 0)
	for i, cm := range sc.commits {
		if t := cm.at.Add(deployDelay).UnixNano(); t > begin && t <= end {
			s.push(t, evDeploy, nil, nil, int32(i), 0)
		}
	}

	// Traffic.
	w := s.w
	gens := []*poisson{
		{rate: seasonalRate(begin, end, sc.ReaderSessions, sc.Weekly), fire: func(s *sim) {
			s.startReader(clsReader, readerLangs, nil, pickW(w.rng, readerRefs))
		}},
		{rate: editorRate(sc, begin, end), fire: func(s *sim) { s.startEditor() }},
		{rate: flat(begin, sc.BotRate), fire: func(s *sim) { s.botRequest() }},
	}
	for i, g := range gens {
		g.scale, g.rng = o.Scale, rand.New(rand.NewPCG(uint64(o.Seed), 10+uint64(i)))
	}
	if c := sc.Crowd; c != nil {
		gens = append(gens, &poisson{rate: crowdRate(c), scale: o.Scale, rng: rand.New(rand.NewPCG(uint64(o.Seed), 20)),
			fire: func(s *sim) {
				s.startReader(clsCrowd, crowdLangs, c.Titles, c.Referers[w.rng.IntN(len(c.Referers))])
			}})
	}
	if c := sc.Crawler; c != nil {
		blocks := crawlerBlocks(c.IPv6Blocks, o.Seed)
		cr := &crawler{spec: c, prof: crawlerProfile(c, w.names), rng: rand.New(rand.NewPCG(uint64(o.Seed), 30)),
			addrs:     &addrGen{rng: rand.New(rand.NewPCG(uint64(o.Seed), 31)), ipv6: c.IPv6, share: c.SharedPrefixShare, blocks: blocks},
			fixedUsed: map[string]bool{}, fixedPrefixes: map[string]bool{}}
		if c.IPv6Share > 0 {
			cr.addrs6 = &addrGen{rng: rand.New(rand.NewPCG(uint64(o.Seed), 33)), ipv6: true, share: c.SharedPrefixShare, blocks: blocks}
		}
		for _, a := range c.Agents {
			spec := *c
			spec.UserAgent, spec.AcceptLanguage, spec.SecChUa = a.UserAgent, a.AcceptLanguage, a.SecChUa
			cr.agents = append(cr.agents, crawlerProfile(&spec, w.names))
		}
		s.crawlerQ = cr
		onset := c.Onset.UnixNano()
		s.st.burst = distinct{from: onset, to: onset + 600*second}
		s.st.window = distinct{from: from, to: end}
		gens = append(gens, &poisson{rate: newCrawlerRate(c, begin, end), scale: o.Scale,
			rng: rand.New(rand.NewPCG(uint64(o.Seed), 32)), fire: cr.dispatch})
	}
	s.st.clientSent = make([]int64, len(sc.Clients))
	s.st.clientPHPSeconds = make([]float64, len(sc.Clients))
	for i := range sc.Clients {
		c := &sc.Clients[i]
		if err := c.validate(); err != nil {
			return nil, fmt.Errorf("simulate %s: %w", sc.Name, err)
		}
		sc := &scheduledClient{spec: c, index: i, prof: clientProfile(c), rng: rand.New(rand.NewPCG(uint64(o.Seed), 40+uint64(i)))}
		for _, r := range c.Requests {
			sc.total += r.Weight
		}
		gens = append(gens, &poisson{rate: clientRate(c), scale: o.Scale, rng: rand.New(rand.NewPCG(uint64(o.Seed), 60+uint64(i))),
			fire: sc.fire})
	}
	if p := sc.Pinning; p != nil {
		pn := &pinner{spec: p}
		gens = append(gens, &poisson{rate: pinRate(p), scale: 1, rng: rand.New(rand.NewPCG(uint64(o.Seed), 80)), fire: pn.open})
	}
	for _, g := range gens {
		g.start(s)
	}
	return s, nil
}

var readerRefs = []weighted{{40, ""}, {25, "https://www.google.com/"}, {25, "https://search.naver.com/"}, {10, "https://search.daum.net/"}}

// editorRate is the rate of new editor sessions: the office's day when the
// scenario gives one, else the site's seasonal curve.
func editorRate(sc *Scenario, begin, end int64) *plf {
	if len(sc.OfficeEditors) == 0 {
		return seasonalRate(begin, end, sc.EditorSessions, sc.Weekly)
	}
	p := &plf{}
	for _, k := range sc.OfficeEditors {
		p.add(k.At.UnixNano(), k.Rate)
	}
	return p
}

func flat(begin int64, v float64) *plf {
	p := &plf{}
	p.add(begin, v)
	return p
}

func crowdRate(c *CrowdSpec) *plf {
	p := &plf{}
	st := c.Start.UnixNano()
	p.add(st-1, 0)
	p.add(st, 0)
	peak := st + int64(minutes(c.RampMinutes))
	p.add(peak, c.PeakSessions)
	end := st + int64(minutes(c.EndMinutes))
	for t := peak + 2*int64(time.Minute); t < end; t += 2 * int64(time.Minute) {
		p.add(t, c.PeakSessions*math.Exp(-float64(t-peak)/float64(minutes(c.DecayMinutes))))
	}
	p.add(end, 0)
	return p
}
