package replay

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/rules/replay/replayreport"
)

// Options says where and how to send a plan.
type Options struct {
	// Target is scheme://host:port of the staging site; its path is ignored
	// (each request keeps its recorded path and query).
	Target *url.URL
	// Loopback binds each recorded client to its own source address in
	// 127.0.0.0/8 (the target must be on loopback). Otherwise the recorded
	// address goes in ForwardedHeader, which the target's Caddy must read
	// through trusted_proxies.
	Loopback        bool
	ForwardedHeader string
	// ClientTimeout is how long a client waits for its answer (the site's
	// client_timeout_s): an answer after it is late, none is a timeout.
	ClientTimeout time.Duration
	// LateWindow is how long past the client's timeout the replay keeps a
	// connection open to see whether, and how, the server still answers. The
	// request leaves the in-flight count at the client's timeout, as the
	// incident's client left.
	LateWindow time.Duration
	// MaxLag bounds the generator's own scheduling lag: a run whose worst lag
	// exceeds it is invalid (what it measured is the generator, not the server).
	MaxLag time.Duration
	// MaxDuration bounds the whole run; 0 means the schedule plus the client
	// timeout plus the late window.
	MaxDuration time.Duration
}

// Result is what a replay measured.
type Result struct {
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// Stopped says why the run ended before its schedule did ("" if it did not).
	Stopped string `json:"stopped,omitempty"`
	// Unsent counts scheduled requests never fired because the run stopped.
	Unsent int `json:"unsent"`
	// Classes holds the taxonomy per class (Class order).
	Classes [replayreport.NumClasses]replayreport.Counts `json:"-"`
	// Seconds holds, per second of replay time, the taxonomy of the requests
	// scheduled in it, per class, and the in-flight high-water mark.
	Seconds []Second `json:"-"`
	// Goodput counts 2xx answers in time per second of replay time, by when
	// they completed.
	Goodput []int `json:"-"`
	// WorstLag is the generator's worst lateness between a request's
	// scheduled instant and its goroutine starting to send it.
	WorstLag   time.Duration `json:"-"`
	WorstLagAt time.Duration `json:"-"`
	// Lags holds each fired request's lag, in shot order (0 for unsent).
	Lags []time.Duration `json:"-"`
	// InFlightHigh is the most requests whose client was still waiting at
	// once; OpenHigh the most connections open at once (late window included).
	InFlightHigh int `json:"in_flight_high_water"`
	OpenHigh     int `json:"open_high_water"`
	// Sources counts the distinct source addresses used on loopback, and
	// MergedSources the recorded clients that had to share one.
	Sources       int `json:"source_addresses,omitempty"`
	MergedSources int `json:"merged_sources,omitempty"`
	// ErrorSamples holds the first message of each transport outcome.
	ErrorSamples map[string]string        `json:"error_samples,omitempty"`
	Environment  replayreport.Environment `json:"environment"`
}

// Second is one second of replay time.
type Second struct {
	Classes      [replayreport.NumClasses]replayreport.Counts
	InFlightHigh int
}

// leadIn is the pause between building the run and its first instant: the
// goroutines and timers of the start are not the schedule's lag.
const leadIn = 50 * time.Millisecond

// sourceKey carries a request's loopback source address to the dialer.
type sourceKey struct{}

type engine struct {
	plan *Plan
	opt  Options
	// cookie is the Cookie value of a logged-in request (rules.LoggedInCookie).
	cookie  string
	tr      *http.Transport
	sources []netip.Addr // per shot, on loopback
	start   time.Time

	inFlight atomic.Int64
	open     atomic.Int64

	mu  sync.Mutex
	res *Result
}

// Run fires the plan at the target, open-loop: every request at its
// instant, computed from the start (never from the previous send), on a
// goroutine of its own, whatever is still in flight. It returns when every
// request is settled, when ctx is cancelled (Ctrl-C: the requests in flight
// are counted as stopped) or when MaxDuration has passed; the Result is
// complete in every case.
func Run(ctx context.Context, p *Plan, o Options) (*Result, error) {
	if o.Target == nil || o.Target.Host == "" || (o.Target.Scheme != "http" && o.Target.Scheme != "https") {
		return nil, errors.New("replay: the target must be an http:// or https:// URL with a host")
	}
	if o.ClientTimeout <= 0 {
		return nil, fmt.Errorf("replay: client timeout %s must be positive", o.ClientTimeout)
	}
	if !o.Loopback && o.ForwardedHeader == "" {
		return nil, errors.New("replay: a target off loopback needs a header to carry the client address")
	}
	e := &engine{plan: p, opt: o, cookie: rules.LoggedInCookie(p.LoggedInCookie), res: &Result{ErrorSamples: map[string]string{}, Environment: replayreport.Environment{
		GoVersion: runtime.Version(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0)}}}
	if o.Loopback {
		ls := newLoopbackSources()
		e.sources = make([]netip.Addr, len(p.Shots))
		for i := range p.Shots {
			e.sources[i] = ls.source(p.Shots[i].Request.ClientIP)
		}
		e.res.Sources, e.res.MergedSources = ls.distinct(), ls.Merged
	}
	e.tr = newTransport(o)
	defer e.tr.CloseIdleConnections()
	e.res.Seconds = make([]Second, int(p.Duration()/time.Second)+1)
	e.res.Lags = make([]time.Duration, len(p.Shots))

	limit := o.MaxDuration
	if limit <= 0 {
		limit = leadIn + p.Duration() + o.ClientTimeout + o.LateWindow + time.Second
	}
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.start = time.Now().Add(leadIn)
	e.res.Started = e.start
	hard := time.NewTimer(limit)
	defer hard.Stop()

	var wg sync.WaitGroup
	tick := time.NewTimer(time.Hour)
	defer tick.Stop()
	stop := ""
dispatch:
	for i := range p.Shots {
		due := e.start.Add(p.Shots[i].Offset)
		if d := time.Until(due); d > 0 {
			tick.Reset(d)
			select {
			case <-tick.C:
			case <-ctx.Done():
				stop = "interrupted"
			case <-hard.C:
				stop = "time bound " + limit.String() + " reached"
			}
			if stop != "" {
				e.res.Unsent = len(p.Shots) - i
				break dispatch
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.fire(runCtx, i, due)
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	if stop != "" {
		cancel()
	} else {
		select {
		case <-done:
		case <-ctx.Done():
			stop = "interrupted"
		case <-hard.C:
			stop = "time bound " + limit.String() + " reached"
		}
		cancel()
	}
	<-done
	e.res.Stopped = stop
	e.res.Ended = time.Now()
	return e.res, nil
}

// newTransport sizes an HTTP/1.1 transport for thousands of requests in
// flight. On loopback every request dials its own connection from its
// client's source address (a pooled connection would carry another
// client's address); off loopback connections are pooled, the address
// travelling in a header.
func newTransport(o Options) *http.Transport {
	d := &net.Dialer{KeepAlive: -1}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if src, ok := ctx.Value(sourceKey{}).(netip.Addr); ok {
			bound := *d
			bound.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
			return bound.DialContext(ctx, network, addr)
		}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Transport{
		DialContext:         dial,
		DisableKeepAlives:   o.Loopback,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
		TLSHandshakeTimeout: o.ClientTimeout,
		// HTTP/1.1 only: the incident's clients each held their own connection.
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
}

// fire sends shot i and classifies what comes back.
func (e *engine) fire(runCtx context.Context, i int, due time.Time) {
	shot := &e.plan.Shots[i]
	e.noteLag(i, time.Since(due), shot.Offset)
	sec := int(shot.Offset / time.Second)

	req, ok := e.request(shot)
	if !ok {
		e.record(shot, sec, replayreport.OutcomeUnsendable, 0, time.Time{}, nil)
		return
	}
	ctx, cancel := context.WithTimeout(runCtx, e.opt.ClientTimeout+e.opt.LateWindow)
	defer cancel()
	if e.sources != nil {
		ctx = context.WithValue(ctx, sourceKey{}, e.sources[i])
	}
	req = req.WithContext(ctx)

	n := e.inFlight.Add(1)
	e.open.Add(1)
	e.noteInFlight(int(n), int(e.open.Load()), sec)
	var left atomic.Bool
	leave := func() {
		if left.CompareAndSwap(false, true) {
			e.inFlight.Add(-1)
		}
	}
	// The client gives up at its timeout: it leaves the in-flight count then,
	// while the connection stays open for the late window.
	giveUp := time.AfterFunc(e.opt.ClientTimeout, leave)
	sent := time.Now()
	status := 0
	resp, err := e.tr.RoundTrip(req)
	if err == nil {
		status = resp.StatusCode
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	doneAt := time.Now()
	giveUp.Stop()
	leave()
	e.open.Add(-1)

	var o replayreport.Outcome
	switch {
	case err != nil && runCtx.Err() != nil:
		o = replayreport.OutcomeStopped
	case err != nil:
		o = transportOutcome(err, doneAt.Sub(sent) > e.opt.ClientTimeout)
	case doneAt.Sub(sent) > e.opt.ClientTimeout:
		o = replayreport.OutcomeLate
	default:
		o = replayreport.OutcomeAnswered
	}
	e.record(shot, sec, o, status, doneAt, err)
}

// request builds the recorded request for the target: method, path and
// query as logged (sent verbatim), Host, and the headers the rules' matchers
// read, rebuilt as the backtest rebuilds them (rules.RequestHeader), with a
// placeholder cookie holding the logged-in pattern for logged-in requests.
// It reports false for a request that cannot be sent as recorded.
func (e *engine) request(s *Shot) (*http.Request, bool) {
	r := &s.Request
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	if !token(method) || !pathOK(r.Path) || !pathOK(r.Query) || !hostOK(r.Host) {
		return nil, false
	}
	u := &url.URL{Scheme: e.opt.Target.Scheme, Host: e.opt.Target.Host, Opaque: r.Path, RawQuery: r.Query}
	h := rules.RequestHeader(r, e.cookie)
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = []string{""} // send none rather than Go's own
	}
	if !e.opt.Loopback {
		h.Set(e.opt.ForwardedHeader, r.ClientIP.String())
	}
	host := r.Host
	if host == "" {
		host = e.opt.Target.Host
	}
	return &http.Request{Method: method, URL: u, Header: h, Host: host, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}, true
}

// token reports whether s is an HTTP method token of letters.
func token(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 'A' || c > 'Z' {
			return false
		}
	}
	return s != ""
}

// pathOK reports whether a logged path or query can go on a request line as
// it is: no blank, control or non-ASCII byte (Caddy logs what it received,
// which such bytes never are on a valid request line).
func pathOK(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '#' {
			return false
		}
	}
	return true
}

// hostOK reports whether a logged Host can be sent as one.
func hostOK(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_') {
			return false
		}
	}
	return true
}

func (e *engine) noteLag(i int, lag, at time.Duration) {
	e.mu.Lock()
	e.res.Lags[i] = lag
	if lag > e.res.WorstLag {
		e.res.WorstLag, e.res.WorstLagAt = lag, at
	}
	e.mu.Unlock()
}

func (e *engine) noteInFlight(n, open, sec int) {
	e.mu.Lock()
	e.res.InFlightHigh = max(e.res.InFlightHigh, n)
	e.res.OpenHigh = max(e.res.OpenHigh, open)
	if sec < len(e.res.Seconds) {
		e.res.Seconds[sec].InFlightHigh = max(e.res.Seconds[sec].InFlightHigh, n)
	}
	e.mu.Unlock()
}

func (e *engine) record(s *Shot, sec int, o replayreport.Outcome, status int, doneAt time.Time, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.res.Classes[s.Class].Add(o, status)
	if sec < len(e.res.Seconds) {
		e.res.Seconds[sec].Classes[s.Class].Add(o, status)
	}
	if o == replayreport.OutcomeAnswered && status >= 200 && status < 300 {
		g := int(doneAt.Sub(e.start) / time.Second)
		if g < 0 {
			g = 0
		}
		for len(e.res.Goodput) <= g {
			e.res.Goodput = append(e.res.Goodput, 0)
		}
		e.res.Goodput[g]++
	}
	if err != nil && o != replayreport.OutcomeStopped {
		name := outcomeName(o)
		if _, seen := e.res.ErrorSamples[name]; !seen {
			e.res.ErrorSamples[name] = err.Error()
		}
	}
}

func outcomeName(o replayreport.Outcome) string {
	switch o {
	case replayreport.OutcomeAnswered:
		return "answered_in_time"
	case replayreport.OutcomeLate:
		return "late"
	case replayreport.OutcomeTimeout:
		return "timeout"
	case replayreport.OutcomeRefused:
		return "connection_refused"
	case replayreport.OutcomeReset:
		return "connection_reset"
	case replayreport.OutcomeEOF:
		return "eof"
	case replayreport.OutcomeStopped:
		return "stopped"
	case replayreport.OutcomeUnsendable:
		return "unsendable"
	}
	return "other_error"
}
