package simulate

import (
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Times inside the engine are int64 nanoseconds since the Unix epoch: exact,
// totally ordered, and what zap prints (as float seconds) in Caddy's logs.
const (
	second = int64(time.Second)
	milli  = int64(time.Millisecond)
	micro  = int64(time.Microsecond)
)

func secs(f float64) int64 { return int64(f * float64(second)) }

type evKind uint8

const (
	evWake          evKind = iota // an actor's timer (a, tag)
	evCaddyDone                   // Caddy finishes a response it makes itself (r)
	evDialRetry                   // the kernel retransmits a dropped SYN (r)
	evDialTimeout                 // Caddy's FastCGI dial_timeout (r)
	evReadTimeout                 // Caddy's FastCGI read_timeout (r)
	evClientTimeout               // the client gives up (r)
	evCPU                         // next completion of a CPU phase (gen)
	evPhase                       // a job's wait phase ends (r, gen = phase generation)
	evHealthTick                  // Caddy's active health check ticker
	evFPMTick                     // php-fpm's once-a-second maintenance
	evSample                      // metrics scrape (15 s)
	evDeploy                      // a commit is deployed (tag = commit index)
	evRestartDone                 // php-fpm is listening again after a restart
	evHealthTimeout               // the health check's own health_timeout, when the proxy honours it (r)
)

type event struct {
	at  int64
	seq uint64
	k   evKind
	gen uint32
	tag int32
	r   *request
	a   actor
}

// evHeap is a binary min-heap on (at, seq): seq breaks ties in push order, so the
// run is deterministic.
type evHeap []event

// push and pop move the parents or children along the path and write the
// moved event once, where it lands, rather than swap at each level: an
// event is 56 bytes with two pointers, and the swaps' copies and write
// barriers were most of the heap's time.
func (h *evHeap) push(e event) {
	*h = append(*h, e)
	a := *h
	i := len(a) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !e.less(&a[p]) {
			break
		}
		a[i] = a[p]
		i = p
	}
	a[i] = e
}

func (h *evHeap) pop() event {
	a := *h
	top := a[0]
	n := len(a) - 1
	last := a[n]
	a[n] = event{}
	a = a[:n]
	if n > 0 {
		i := 0
		for {
			l := 2*i + 1
			if l >= n {
				break
			}
			m := l
			if r := l + 1; r < n && a[r].less(&a[l]) {
				m = r
			}
			if !a[m].less(&last) {
				break
			}
			a[i] = a[m]
			i = m
		}
		a[i] = last
	}
	*h = a
	return top
}

func (e *event) less(o *event) bool {
	if e.at != o.at {
		return e.at < o.at
	}
	return e.seq < o.seq
}

// actor is anything with timers: traffic generators, sessions, the crawler.
type actor interface {
	wake(s *sim, tag int32)
}

// owner is told when the client of a request sees its end: a response, or its
// own timeout (whichever comes first; exactly once).
type owner interface {
	done(s *sim, r *request)
}

type class uint8

const (
	clsReader class = iota
	clsEditor
	clsBot
	clsCrawler
	clsCrowd
	clsSelfAPI
	clsHealth
	clsClient // a scenario's ClientSpec
	clsPinner // an idle connection straight to php-fpm (PinSpec): never in Caddy's log
)

var classNames = [...]string{"reader", "editor", "searchbot", "crawler", "crowd", "self_api", "health", "client", "pinner"}

func (c class) String() string { return classNames[c] }

type route uint8

const (
	routePHP    route = iota // php_fastcgi
	routeStatic              // file_server: css, js, images
	routeCache               // MediaWiki's HTML file cache, served by Caddy
)

// PHP job phases: CPU, then a wait (database, network), then for Special:NewItem
// the call to the site's own api.php, then a little more CPU.
const (
	phCPU1 uint8 = iota
	phWait
	phAPI
	phCPU2
	phDone
)

type request struct {
	seq     int64
	cls     class
	kind    kind
	tool    Tool
	prof    *profile
	ip      string
	port    uint16
	method  string
	uri     string
	referer string
	bytesIn int
	retryOf int64
	tries   int8
	client  int8 // index of its ClientSpec (clsClient)
	owner   owner
	timeout int64 // the client's patience, ns
	route   route
	notMod  bool // static/cache answered 304

	retryAfter int // 429: seconds until the zone has room

	// PHP work, seconds, drawn when the request is made.
	cpu1, wait, cpu2 float64
	phpStatus        int
	phpSize          int

	// Caddy side.
	start     int64
	dialAt    int64
	connected bool
	connectAt int64
	localPort uint16
	caddyDone bool
	caddyEnd  int64
	status    int
	size      int
	origin    string

	// php-fpm side.
	phase    uint8
	phaseGen uint32
	cpuLeft  float64
	worker   *child
	phpStart int64
	phpEnd   int64
	dropped  bool // reset in the listen queue by a php-fpm restart
	slow     bool
	parent   *request // Special:NewItem waiting for this api.php call

	clientEnd int64
	gaveUp    bool
}

// finished: nothing more will happen to r (its truth row can be written).
func (r *request) finished() bool {
	if !r.caddyDone {
		return false
	}
	if r.connected && !r.dropped && r.phpEnd == 0 {
		return false
	}
	return true
}

// sim is one run. Everything it does is driven by events in time order.
type sim struct {
	// procAcct is the truth of the per-process series (processes.go).
	procAcct processAccount

	sc    *Scenario
	now   int64
	begin int64
	end   int64
	seq   uint64
	ev    evHeap
	scale float64

	cfg     SiteConfig // in force now (Caddy's and php-fpm's view)
	healthy bool
	fails   int
	passes  int
	zones   []*zoneState

	fpm fpmState
	cpu cpuSched

	rng      *rand.Rand // engine draws: service times, sizes, jitter
	w        *world
	selfProf *profile
	reqSeq   int64
	lport    uint16
	out      *outputs
	st       *stats
	metrics  *metricStore
	crawlerQ *crawler
}

func (s *sim) push(at int64, k evKind, r *request, a actor, tag int32, gen uint32) {
	s.seq++
	s.ev.push(event{at: at, seq: s.seq, k: k, r: r, a: a, tag: tag, gen: gen})
}

func (s *sim) after(d int64, a actor, tag int32) { s.push(s.now+d, evWake, nil, a, tag, 0) }

// jitter returns a small positive duration around median (lognormal), for the
// time Caddy spends on a response it makes itself.
func (s *sim) jitter(median int64) int64 {
	return int64(float64(median) * math.Exp(0.35*s.rng.NormFloat64()))
}

// run processes events until the end of the window.
func (s *sim) run(check func() error) error {
	var n uint64
	for len(s.ev) > 0 {
		e := s.ev.pop()
		if e.at > s.end {
			break
		}
		s.now = e.at
		s.dispatch(&e)
		n++
		if n&0xffff == 0 {
			if err := check(); err != nil {
				return err
			}
		}
	}
	s.now = s.end
	return nil
}

func (s *sim) dispatch(e *event) {
	r := e.r
	switch e.k {
	case evWake:
		e.a.wake(s, e.tag)
	case evCaddyDone:
		s.respond(r, r.status, r.size)
	case evDialRetry:
		s.dialRetry(r)
	case evDialTimeout:
		if !r.connected && !r.caddyDone {
			s.upstreamFailed(r, 502, "dial tcp 127.0.0.1:9000: i/o timeout")
		}
	case evReadTimeout:
		if !r.caddyDone {
			s.upstreamFailed(r, 504, "read tcp 127.0.0.1:"+itoa(int(r.localPort))+"->127.0.0.1:9000: i/o timeout")
		}
	case evClientTimeout:
		if r.clientEnd == 0 {
			r.clientEnd = s.now
			r.gaveUp = true
			if r.owner != nil {
				r.owner.done(s, r)
			}
		}
	case evCPU:
		s.cpu.fire(s, e.gen)
	case evPhase:
		if r.phaseGen == e.gen && r.phase == phWait {
			s.step(r)
		}
	case evHealthTick:
		s.healthTick()
	case evFPMTick:
		s.fpmTick()
	case evSample:
		s.sample()
	case evDeploy:
		s.deploy(int(e.tag))
	case evRestartDone:
		s.restartDone()
	case evHealthTimeout:
		if !r.caddyDone {
			s.healthResult(r, false, "context deadline exceeded (Client.Timeout exceeded while awaiting headers)")
		}
	}
}

// send is a client's request reaching Caddy now.
func (s *sim) send(r *request) {
	s.reqSeq++
	r.seq = s.reqSeq
	r.start = s.now
	s.st.sent(s, r)
	switch r.route {
	case routeStatic, routeCache:
		s.caddyAnswer(r, s.staticAnswer(r), 250*micro)
		return
	}
	if z := s.limited(r); z != nil {
		r.origin = "ratelimit"
		r.status, r.size = 429, 0
		r.retryAfter = z.retryAfter(s.now)
		s.push(s.now+s.jitter(120*micro), evCaddyDone, r, nil, 0, 0)
		return
	}
	if !s.healthy {
		s.caddyAnswer(r, 503, 230*micro)
		return
	}
	if r.timeout > 0 {
		s.push(s.now+r.timeout, evClientTimeout, r, nil, 0, 0)
	}
	s.dial(r)
}

// staticAnswer is Caddy's file_server: a 304 to a revalidation, else the file.
func (s *sim) staticAnswer(r *request) int {
	if r.notMod {
		r.size = 0
		return 304
	}
	if r.route == routeCache {
		return 200
	}
	for i := range wpAssets {
		if s.sc.App == AppWordPress && wpAssets[i].uri == r.uri {
			r.size = wpAssets[i].size
			if wpAssets[i].gz {
				r.size /= 3
			}
			return 200
		}
	}
	for i := range siteAssets {
		if siteAssets[i].uri == r.uri {
			r.size = siteAssets[i].size
			if siteAssets[i].gz {
				r.size /= 3
			}
			return 200
		}
	}
	if r.uri == "/robots.txt" {
		r.size = 312
		return 200
	}
	h := uint32(0)
	for i := 0; i < len(r.uri); i++ {
		h = h*31 + uint32(r.uri[i])
	}
	r.size = 18000 + int(h%110000)
	return 200
}

// caddyAnswer schedules a response Caddy makes itself (static file, cached
// page, 503 without a healthy upstream) after a short, jittered delay.
func (s *sim) caddyAnswer(r *request, status int, median int64) {
	r.status = status
	switch {
	case status == 503:
		r.origin, r.size = "proxy", 0
	case r.route == routeCache:
		r.origin = "cache"
	case r.route == routeStatic:
		r.origin = "static"
	}
	s.push(s.now+s.jitter(median), evCaddyDone, r, nil, 0, 0)
}

// dial is Caddy's FastCGI connect to php-fpm. The kernel completes the handshake
// and queues the connection while the accept queue has room; beyond
// listen.backlog it drops the SYN, the client retransmits after 1 s, and Caddy's
// dial_timeout (3 s) ends the attempt.
func (s *sim) dial(r *request) {
	r.dialAt = s.now
	if s.fpm.down {
		s.fpm.refused++
		if r.cls == clsHealth {
			s.healthResult(r, false, "dial tcp 127.0.0.1:9000: connect: connection refused")
			return
		}
		r.origin, r.status, r.size = "proxy", 502, 0
		s.push(s.now+s.jitter(400*micro), evCaddyDone, r, nil, 0, 0)
		return
	}
	if s.fpm.queueLen() < s.fpm.backlog {
		s.connect(r)
		return
	}
	s.fpm.overflows++
	s.push(s.now+second, evDialRetry, r, nil, 0, 0)
	s.push(s.now+secs(s.sc.DialTimeoutS)+s.jitter(500*micro), evDialTimeout, r, nil, 0, 0)
}

func (s *sim) dialRetry(r *request) {
	if r.connected || r.caddyDone || s.fpm.down {
		return
	}
	if s.fpm.queueLen() < s.fpm.backlog {
		s.connect(r)
		return
	}
	s.fpm.overflows++
}

func (s *sim) connect(r *request) {
	r.connected = true
	r.connectAt = s.now
	s.lport += 2
	if s.lport < 32768 {
		s.lport = 32768 + s.lport%2
	}
	r.localPort = s.lport
	if rt := s.cfg.ReadTimeoutS; rt > 0 {
		// Caddy writes its error and access lines a little after the deadline
		s.push(s.now+secs(rt)+s.jitter(700*micro), evReadTimeout, r, nil, 0, 0)
	}
	if r.cls == clsHealth && s.sc.HealthTimeoutQueued {
		// the check's http.Client deadline counts from when the check began,
		// dial included; this proxy cuts the check short even once connected
		s.push(max(s.now, r.start+secs(s.sc.HealthTimeoutS))+s.jitter(300*micro), evHealthTimeout, r, nil, 0, 0)
	}
	s.fpm.enqueue(s, r)
}

// upstreamFailed: Caddy gives up on php-fpm for r (dial or read timeout, reset).
func (s *sim) upstreamFailed(r *request, status int, errText string) {
	if r.cls == clsHealth {
		s.healthResult(r, false, errText)
		return
	}
	r.origin = "proxy"
	s.out.caddyError(s, r, status, errText)
	s.respond(r, status, 0)
}

// respond is Caddy finishing r now: the access-log line is written in the order
// Caddy writes them, at the end of the response.
func (s *sim) respond(r *request, status, size int) {
	if r.caddyDone {
		return
	}
	if r.cls == clsHealth {
		s.healthResult(r, status == 200, "")
		return
	}
	r.caddyDone = true
	r.caddyEnd = s.now
	r.status, r.size = status, size
	if status == 503 {
		s.out.caddyError(s, r, 503, "no upstreams available")
	} else if status == 502 && r.origin == "proxy" && !r.connected && s.now-r.start < second {
		s.out.caddyError(s, r, 502, "dial tcp 127.0.0.1:9000: connect: connection refused")
	}
	s.out.access(s, r)
	s.st.responded(s, r)
	if r.clientEnd == 0 {
		r.clientEnd = s.now
		if r.owner != nil {
			r.owner.done(s, r)
		}
	}
	s.retire(r)
}

func (s *sim) retire(r *request) {
	if r.cls != clsHealth && r.cls != clsPinner && r.finished() {
		s.st.finished(s, r)
		s.out.truthRow(s, r)
	}
}

// ---- php-fpm ----------------------------------------------------------------

type child struct {
	pid int
	job *request
	// state is its last request as php-fpm's status page shows it (kept
	// for a scenario with a ProcessModel only).
	state childState
}

type fpmState struct {
	backlog     int
	maxChildren int // pm.max_children in force
	queue       []*request
	head        int
	kids        []*child // alive children
	idle        []*child
	active      int
	down        bool
	nextPid     int
	started     int64

	spawnRate  int
	warnedMax  bool
	accepted   int64
	maxQueue   int
	maxActive  int
	maxReached int64
	slowReqs   int64
	overflows  int64 // SYNs dropped (node_netstat_TcpExt_ListenOverflows)
	refused    int64
}

func (f *fpmState) queueLen() int { return len(f.queue) - f.head }

func (f *fpmState) enqueue(s *sim, r *request) {
	if n := len(f.idle); n > 0 {
		c := f.idle[n-1]
		f.idle = f.idle[:n-1]
		s.startJob(c, r)
		return
	}
	f.queue = append(f.queue, r)
	if q := f.queueLen(); q > f.maxQueue {
		f.maxQueue = q
	}
	s.st.queued(s, f.queueLen())
}

func (f *fpmState) dequeue() *request {
	if f.head >= len(f.queue) {
		return nil
	}
	r := f.queue[f.head]
	f.queue[f.head] = nil
	f.head++
	if f.head > 4096 && f.head*2 > len(f.queue) {
		n := copy(f.queue, f.queue[f.head:])
		clear(f.queue[n:])
		f.queue = f.queue[:n]
		f.head = 0
	}
	return r
}

func (f *fpmState) spawn() {
	f.nextPid++
	c := &child{pid: f.nextPid}
	f.kids = append(f.kids, c)
	f.idle = append(f.idle, c)
}

func (s *sim) startJob(c *child, r *request) {
	c.job = r
	r.worker = c
	r.phpStart = s.now
	s.fpm.accepted++
	s.fpm.active++
	if s.fpm.active > s.fpm.maxActive {
		s.fpm.maxActive = s.fpm.active
	}
	r.phase = phCPU1
	if r.cls == clsHealth {
		r.cpu1, r.wait, r.cpu2 = 0.0008, 0, 0
	}
	s.runPhase(r)
}

// runPhase starts r's current phase, skipping empty ones.
func (s *sim) runPhase(r *request) {
	for {
		switch r.phase {
		case phCPU1:
			if r.cpu1 > 0 {
				s.cpu.add(s, r, r.cpu1)
				return
			}
		case phWait:
			w := r.wait
			if r.cls != clsPinner { // an idle connection waits for a request, not the database
				w = s.dbWait(w)
			}
			if w > 0 {
				r.phaseGen++
				s.push(s.now+secs(w), evPhase, r, nil, 0, r.phaseGen)
				return
			}
		case phAPI:
			if r.tool == ToolNewItem && r.cls != clsHealth {
				s.selfAPI(r)
				return
			}
		case phCPU2:
			if r.cpu2 > 0 {
				s.cpu.add(s, r, r.cpu2)
				return
			}
		case phDone:
			s.finishJob(r)
			return
		}
		r.phase++
	}
}

// step ends r's current phase and starts the next.
func (s *sim) step(r *request) {
	r.phase++
	s.runPhase(r)
}

func (s *sim) finishJob(r *request) {
	r.phpEnd = s.now
	c := r.worker
	s.requestDone(c, r)
	c.job = nil
	r.worker = nil
	s.fpm.active--
	s.st.phpDone(s, r)
	if r.cls == clsPinner {
		// php-fpm's side gave up on the idle connection: nothing reaches Caddy
	} else if r.cls == clsHealth {
		if !r.caddyDone {
			s.healthResult(r, true, "")
		}
	} else if !r.caddyDone {
		r.origin = "php"
		s.respond(r, r.phpStatus, r.phpSize)
	} else {
		s.retire(r)
	}
	if len(s.fpm.kids) > s.fpm.maxChildren {
		// a graceful reload lowered pm.max_children: this child exits
		s.fpm.removeKid(c)
		return
	}
	if next := s.fpm.dequeue(); next != nil {
		s.startJob(c, next)
		return
	}
	s.fpm.idle = append(s.fpm.idle, c)
}

func (f *fpmState) removeKid(c *child) {
	for i, k := range f.kids {
		if k == c {
			f.kids = append(f.kids[:i], f.kids[i+1:]...)
			return
		}
	}
}

// fpmTick is php-fpm's master loop: the slow-request check of the heartbeat and
// the dynamic process manager (fpm_pctl_perform_idle_server_maintenance). Only a
// dynamic or ondemand pool counts max_children_reached and logs "server reached
// pm.max_children": a static pool never does, which is why the site's pool is
// dynamic with max_children as its fixed ceiling.
func (s *sim) fpmTick() {
	s.push(s.now+second, evFPMTick, nil, nil, 0, 0)
	f := &s.fpm
	if f.down {
		return
	}
	slow := secs(s.sc.SlowlogTimeoutS)
	for _, c := range f.kids {
		if r := c.job; r != nil && !r.slow && r.cls != clsPinner && s.now-r.phpStart >= slow {
			r.slow = true
			f.slowReqs++
			s.out.slowLog(s, c.pid, r)
		}
	}
	idle := len(f.idle)
	if idle > s.sc.MaxSpare {
		// kill the last idle child
		c := f.idle[0]
		f.idle = f.idle[1:]
		for i, k := range f.kids {
			if k == c {
				f.kids = append(f.kids[:i], f.kids[i+1:]...)
				break
			}
		}
		f.spawnRate = 1
		return
	}
	if idle < s.sc.MinSpare {
		fork := min(f.spawnRate, s.sc.MinSpare-idle, f.maxChildren-len(f.kids))
		if len(f.kids) >= f.maxChildren || fork <= 0 {
			if !f.warnedMax {
				f.maxReached++
				f.warnedMax = true
				s.out.fpmLog(s, "WARNING: [pool www] server reached pm.max_children setting ("+itoa(f.maxChildren)+"), consider raising it")
			}
			f.spawnRate = 1
			return
		}
		if f.spawnRate >= 8 {
			s.out.fpmLog(s, "WARNING: [pool www] seems busy (you may need to increase pm.start_servers, or pm.min/max_spare_servers), spawning "+
				itoa(f.spawnRate)+" children, there are "+itoa(idle)+" idle, and "+itoa(len(f.kids))+" total children")
		}
		f.warnedMax = false
		for range fork {
			f.spawn()
			if r := f.dequeue(); r != nil {
				c := f.idle[len(f.idle)-1]
				f.idle = f.idle[:len(f.idle)-1]
				s.startJob(c, r)
			}
		}
		if f.spawnRate < 32 {
			f.spawnRate *= 2
		}
		return
	}
	f.spawnRate = 1
}

// ---- processor sharing --------------------------------------------------------

// cpuSched shares the host's cores among the jobs in a CPU phase (processor
// sharing): with more CPU-bound workers than cores each runs slower, which is
// what "CPU-bound" means for throughput: more workers do not help.
type cpuSched struct {
	cores float64
	jobs  []*request
	last  int64
	gen   uint32
	busy  float64 // core-seconds used by PHP since the start
}

func (c *cpuSched) rate() float64 {
	if n := float64(len(c.jobs)); n > c.cores {
		return c.cores / n
	}
	return 1
}

func (c *cpuSched) advance(now int64) {
	if dt := float64(now-c.last) / float64(second); dt > 0 && len(c.jobs) > 0 {
		r := c.rate()
		for _, j := range c.jobs {
			j.cpuLeft -= dt * r
		}
		c.busy += dt * math.Min(float64(len(c.jobs)), c.cores)
	}
	c.last = now
}

func (c *cpuSched) add(s *sim, r *request, work float64) {
	c.advance(s.now)
	r.cpuLeft = work
	c.jobs = append(c.jobs, r)
	c.reschedule(s)
}

func (c *cpuSched) reschedule(s *sim) {
	c.gen++
	if len(c.jobs) == 0 {
		return
	}
	least := math.Inf(1)
	for _, j := range c.jobs {
		least = math.Min(least, j.cpuLeft)
	}
	d := int64(math.Ceil(math.Max(least, 0) / c.rate() * float64(second)))
	s.push(s.now+d, evCPU, nil, nil, 0, c.gen)
}

func (c *cpuSched) fire(s *sim, gen uint32) {
	if gen != c.gen {
		return
	}
	c.advance(s.now)
	var done []*request
	keep := c.jobs[:0]
	for _, j := range c.jobs {
		if j.cpuLeft <= 1e-9 {
			done = append(done, j)
		} else {
			keep = append(keep, j)
		}
	}
	clear(c.jobs[len(keep):])
	c.jobs = keep
	c.reschedule(s)
	for _, j := range done {
		s.step(j)
	}
}

// ---- Caddy's active health check ------------------------------------------------

// healthTick sends one check. Caddy starts a goroutine per tick, so checks
// overlap: a check stuck in the listen queue does not delay the next one.
func (s *sim) healthTick() {
	s.push(s.now+secs(s.sc.HealthIntervalS), evHealthTick, nil, nil, 0, 0)
	r := &request{cls: clsHealth, method: "GET", uri: "/healthz.php", start: s.now}
	s.dial(r)
}

// healthResult applies Caddy's counting (healthchecks.go): failures accumulate
// while healthy (a pass does not reset them) until health_fails marks the host
// down; while down, one pass (health_passes 1) marks it up; both transitions
// reset the counters. Only "host is up" is logged; going down emits an event
// that the default log does not show.
func (s *sim) healthResult(r *request, ok bool, errText string) {
	if r.caddyDone {
		return
	}
	r.caddyDone = true
	if !ok {
		if errText == "" {
			errText = "unexpected status"
		}
		suffix := ""
		// health_timeout's http.Client timer fires too; when it is due no later
		// than the read timeout, the error says so (about 60% of the time in the lab
		// recording when both were 10 s: the two timers race).
		if r.connected && s.cfg.ReadTimeoutS > 0 && s.sc.HealthTimeoutS <= s.cfg.ReadTimeoutS &&
			!strings.Contains(errText, "Client.Timeout") &&
			(s.sc.HealthTimeoutS < s.cfg.ReadTimeoutS || s.rng.Float64() < 0.59) {
			suffix = " (Client.Timeout exceeded while awaiting headers)"
		}
		s.out.healthFailed(s, `Get "http://127.0.0.1:9000/healthz.php": `+errText+suffix)
		s.fails++
		s.st.healthFail(s)
		if s.fails >= s.sc.HealthFails && s.healthy {
			s.healthy = false
			s.fails, s.passes = 0, 0
			s.st.down(s)
		}
		return
	}
	s.passes++
	if s.passes >= 1 && !s.healthy {
		s.healthy = true
		s.fails, s.passes = 0, 0
		s.out.healthUp(s)
		s.st.up(s)
	}
}

// ---- rate limiting (caddy-ratelimit, static key: one site-wide bucket) ----------

type zoneState struct {
	RateLimit
	ring []int64 // times of accepted events, oldest at ring[pos]
	pos  int
	n    int
}

func (z *zoneState) allow(now int64) bool {
	win := secs(z.WindowS)
	if z.n < z.Events {
		z.ring[(z.pos+z.n)%z.Events] = now
		z.n++
		return true
	}
	if now-z.ring[z.pos] >= win {
		z.ring[z.pos] = now
		z.pos = (z.pos + 1) % z.Events
		return true
	}
	return false
}

// retryAfter is the whole seconds until the oldest event leaves the window.
func (z *zoneState) retryAfter(now int64) int {
	d := z.ring[z.pos] + secs(z.WindowS) - now
	return int((d + second - 1) / second)
}

// limited returns the zone that refuses r, or nil.
func (s *sim) limited(r *request) *zoneState {
	for _, z := range s.zones {
		if zoneMatches(z.Name, r) && !z.allow(s.now) {
			return z
		}
	}
	return nil
}

// zoneMatches is the predicate of each zone the Caddyfile writes (config.go).
func zoneMatches(name string, r *request) bool {
	if r.prof != nil && r.prof.loggedIn {
		return false
	}
	switch name {
	case "link_walk":
		return r.tool == ToolWhatLinksHereTitle || r.kind == kindRedLink
	case "page_tools":
		switch r.tool {
		case ToolEdit, ToolWatch, ToolContributions, ToolRecentChangesLinked, ToolCiteThisPage, ToolNewItem, ToolWhatLinksHere:
			return true
		}
	}
	return false
}

// ---- deploys ------------------------------------------------------------------

// deploy applies commit i: a change of image or backlog restarts php-fpm (the
// container is replaced: a few seconds of refused connections, queued
// connections reset); a Caddyfile change is a graceful reload.
func (s *sim) deploy(i int) {
	cfg, _ := s.sc.configAt(time.Unix(0, s.now))
	old := s.cfg
	s.setCaddyConfig(cfg)
	if cfg.Backlog == old.Backlog && cfg.Image == old.Image {
		s.cfg = cfg
		if mc := s.sc.maxChildren(cfg); mc != s.fpm.maxChildren {
			s.reloadPool(mc)
		}
		return
	}
	s.cfg.Backlog, s.cfg.Image = old.Backlog, old.Image // php-fpm keeps the old ones until it is back
	f := &s.fpm
	f.down = true
	s.out.fpmLog(s, "NOTICE: Terminating ...")
	for r := f.dequeue(); r != nil; r = f.dequeue() {
		r.dropped = true
		s.upstreamFailed(r, 502, "read tcp 127.0.0.1:"+itoa(int(r.localPort))+"->127.0.0.1:9000: read: connection reset by peer")
		s.retire(r)
	}
	s.out.fpmLog(s, "NOTICE: exiting, bye-bye!")
	s.push(s.now+4*second+s.jitter(300*milli), evRestartDone, nil, nil, 0, 0)
	_ = i
}

// reloadPool is php-fpm's graceful reload with a new pm.max_children: idle
// children beyond it exit now, busy ones when their request ends (finishJob).
func (s *sim) reloadPool(maxChildren int) {
	f := &s.fpm
	f.maxChildren = maxChildren
	s.out.fpmLog(s, "NOTICE: Reloading in progress ...")
	for len(f.kids) > f.maxChildren && len(f.idle) > 0 {
		c := f.idle[0]
		f.idle = f.idle[1:]
		f.removeKid(c)
	}
	s.out.fpmLog(s, "NOTICE: using inherited socket fd=7, \"127.0.0.1:9000\"")
	s.out.fpmLog(s, "NOTICE: ready to handle connections")
}

func (s *sim) setCaddyConfig(cfg SiteConfig) {
	s.cfg.ReadTimeoutS = cfg.ReadTimeoutS
	s.cfg.Zones = cfg.Zones
	s.zones = s.zones[:0]
	for _, z := range cfg.Zones {
		s.zones = append(s.zones, &zoneState{RateLimit: z, ring: make([]int64, z.Events)})
	}
}

func (s *sim) restartDone() {
	cfg, _ := s.sc.configAt(time.Unix(0, s.now))
	s.cfg = cfg
	s.setCaddyConfig(cfg)
	f := &s.fpm
	f.down = false
	f.backlog = cfg.Backlog
	f.maxChildren = s.sc.maxChildren(cfg)
	f.started = s.now
	f.accepted, f.maxQueue, f.maxReached, f.slowReqs = 0, 0, 0, 0
	f.maxActive = f.active
	f.warnedMax, f.spawnRate = false, 1
	// The new master (pid 1 in its container) forks new children; the old
	// children still finishing a request are gone once they do.
	f.nextPid = 6
	for _, c := range f.kids {
		f.nextPid++
		c.pid = f.nextPid
	}
	for len(f.kids) < s.sc.StartServers {
		f.spawn()
	}
	s.out.fpmLog(s, "NOTICE: fpm is running, pid 1")
	s.out.fpmLog(s, "NOTICE: ready to handle connections")
}
