package simulate

// stats collects, while the run streams its files, the numbers that go into
// truth.json and the Summary: a few counters and per-minute arrays, never a
// list of requests.
type stats struct {
	begin, winFrom, winTo int64

	status    map[int]int64
	winStatus map[int]int64
	minutes   []minuteStat // by access-log time, from begin
	caddyCPU  float64      // core-seconds Caddy spent
	classSent [len(classNames)]int64
	gaveUp    int64
	abandoned [len(classNames)]int64

	crawler        int64
	crawlerRetries int64
	crawler10      []int64 // crawler requests by start, 10-minute buckets from begin
	crawlerPHP10   []int64 // crawler requests PHP answered, by log time, 10-minute buckets from begin
	burst, window  distinct

	queuePeak   int
	queuePeakAt int64
	winQueue    []TruthCount // the listen queue at each whole-minute scrape inside the window
	queueFullAt int64
	satAt       int64 // first scrape after the window opened... see sampled

	hcFails   int64
	downs     int64
	firstDown int64
	firstFail int64
	downSince int64
	downNS    int64

	selfAPI      int64
	newItemLong  int64
	firstNewItem int64
	first503     int64
	last5xx      int64
	lastIPFresh  bool
	lastPfxFresh bool

	// failedByArrival counts, by the minute a request arrived (log time minus
	// duration), the access-log lines that failed their client: a 5xx, a 429,
	// or an answer after the site's client timeout; loggedByArrival all the
	// access-log lines, the minute's arrivals a failed share is taken of.
	failedByArrival []int32
	loggedByArrival []int32
	// phpSeconds is the PHP time (worker held) of requests that ended inside
	// the window, in total and by ClientSpec.
	phpSeconds       float64
	clientPHPSeconds []float64
	clientSent       []int64
}

type minuteStat struct {
	s502, s503, s504 int32
}

// distinct counts the crawler's distinct addresses and prefixes in a time
// range. Addresses are handed out consecutively (an address is never reused
// once the crawler moves on), so "a different address than the last one" is
// "a new distinct address".
type distinct struct {
	from, to    int64
	reqs        int64
	ips, pfx    int64
	ipIn, pfxIn bool
	// seen and seenPfx hold a fixed-address crawler's addresses and
	// prefixes in the range (addFixed): they are reused, not handed out.
	seen, seenPfx map[string]bool
}

// addFixed counts a request of a crawler on fixed addresses
// (CrawlerSpec.Addresses) from ip at t.
func (d *distinct) addFixed(t int64, ip string) {
	if t < d.from || t >= d.to {
		return
	}
	if d.seen == nil {
		d.seen, d.seenPfx = map[string]bool{}, map[string]bool{}
	}
	d.reqs++
	if !d.seen[ip] {
		d.seen[ip] = true
		d.ips++
		if p := prefixOf(ip); !d.seenPfx[p] {
			d.seenPfx[p] = true
			d.pfx++
		}
	}
}

func (d *distinct) add(t int64, fresh, freshPrefix bool) {
	if fresh {
		d.ipIn = false
		if freshPrefix {
			d.pfxIn = false
		}
	}
	if t < d.from || t >= d.to {
		return
	}
	d.reqs++
	if !d.ipIn {
		d.ips++
		d.ipIn = true
	}
	if !d.pfxIn {
		d.pfx++
		d.pfxIn = true
	}
}

func newStats(begin, end, winFrom, winTo int64) *stats {
	n := int((end-begin)/(60*second)) + 2
	return &stats{begin: begin, winFrom: winFrom, winTo: winTo, failedByArrival: make([]int32, n), loggedByArrival: make([]int32, n),
		status: map[int]int64{}, winStatus: map[int]int64{},
		minutes: make([]minuteStat, n), crawler10: make([]int64, n/10+1), crawlerPHP10: make([]int64, n/10+1)}
}

func (st *stats) sent(s *sim, r *request) {
	st.classSent[r.cls]++
	switch r.cls {
	case clsCrawler:
		st.crawler++
		if r.retryOf != 0 {
			st.crawlerRetries++
		}
		if i := int((r.start - st.begin) / (600 * second)); i >= 0 && i < len(st.crawler10) {
			st.crawler10[i]++
		}
		if c, ok := r.owner.(*crawler); ok && len(c.spec.Addresses) > 0 {
			st.burst.addFixed(r.start, r.ip)
			st.window.addFixed(r.start, r.ip)
			break
		}
		st.burst.add(r.start, st.lastIPFresh, st.lastPfxFresh)
		st.window.add(r.start, st.lastIPFresh, st.lastPfxFresh)
		st.lastIPFresh, st.lastPfxFresh = false, false
	case clsSelfAPI:
		st.selfAPI++
	}
}

func (st *stats) responded(s *sim, r *request) {
	st.status[r.status]++
	if i := int((r.start - st.begin) / (60 * second)); i >= 0 && i < len(st.loggedByArrival) {
		st.loggedByArrival[i]++
	}
	if r.status >= 500 || r.status == 429 || s.now-r.start > secs(s.sc.ClientTimeoutS) {
		if i := int((r.start - st.begin) / (60 * second)); i >= 0 && i < len(st.failedByArrival) {
			st.failedByArrival[i]++
		}
	}
	in := s.now >= st.winFrom && s.now < st.winTo
	if in {
		st.winStatus[r.status]++
	}
	if r.route == routePHP {
		st.caddyCPU += 0.00035
	} else {
		st.caddyCPU += 0.00015
	}
	if i := int((s.now - st.begin) / (60 * second)); i >= 0 && i < len(st.minutes) {
		m := &st.minutes[i]
		switch r.status {
		case 502:
			m.s502++
		case 503:
			m.s503++
		case 504:
			m.s504++
		}
		if r.cls == clsCrawler && r.origin == "php" {
			st.crawlerPHP10[i/10]++
		}
	}
	if r.status >= 500 && in {
		if r.status == 503 && st.first503 == 0 {
			st.first503 = s.now
		}
		st.last5xx = s.now
	}
}

func (st *stats) finished(s *sim, r *request) {
	if r.gaveUp {
		st.gaveUp++
	}
	if abandoned(r) {
		st.abandoned[r.cls]++
	}
}

func (st *stats) phpDone(s *sim, r *request) {
	if s.now >= st.winFrom && s.now < st.winTo && r.cls != clsHealth && r.cls != clsPinner {
		d := float64(s.now-r.phpStart) / 1e9
		st.phpSeconds += d
		if r.cls == clsClient {
			st.clientPHPSeconds[r.client] += d
		}
	}
	if r.tool == ToolNewItem && r.phpEnd-r.phpStart >= 20*second {
		st.newItemLong++
		if st.firstNewItem == 0 {
			st.firstNewItem = r.phpStart
		}
	}
}

func (st *stats) queued(s *sim, q int) {
	if q > st.queuePeak {
		st.queuePeak, st.queuePeakAt = q, s.now
	}
}

func (st *stats) sampled(s *sim) {
	f := &s.fpm
	q := f.queueLen()
	if q >= f.backlog && st.queueFullAt == 0 && s.now >= st.winFrom-3600*second {
		st.queueFullAt = s.now
	}
	if f.active >= f.maxChildren && st.satAt == 0 && s.now >= st.winFrom-3600*second {
		st.satAt = s.now
	}
	if s.now%(60*second) == 0 && s.now >= st.winFrom && s.now < st.winTo {
		st.winQueue = append(st.winQueue, TruthCount{From: rfc(s.now), Count: int64(q)})
	}
}

func (st *stats) healthFail(s *sim) {
	st.hcFails++
	if st.firstFail == 0 && s.now >= st.winFrom-3600*second {
		st.firstFail = s.now
	}
}

func (st *stats) down(s *sim) {
	st.downs++
	st.downSince = s.now
	if st.firstDown == 0 && s.now >= st.winFrom {
		st.firstDown = s.now
	}
}

func (st *stats) up(s *sim) {
	if st.downSince != 0 {
		st.downNS += s.now - st.downSince
		st.downSince = 0
	}
}
