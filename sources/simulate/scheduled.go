package simulate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Clients with schedules of their own (Scenario.Clients) and idle connections
// that pin php-fpm workers (Scenario.Pinning). Each draws from its own random
// streams, so a scenario without them writes exactly what it wrote before they
// existed.

// scheduledClient sends a ClientSpec's requests at its rate.
type scheduledClient struct {
	spec  *ClientSpec
	index int
	prof  *profile
	rng   *rand.Rand
	total float64 // sum of the requests' weights
}

func (c *ClientSpec) validate() error {
	if c.Name == "" || c.UserAgent == "" || len(c.IPs) == 0 || len(c.Rate) == 0 || len(c.Requests) == 0 {
		return fmt.Errorf("client %q: name, user agent, addresses, rate and requests are required", c.Name)
	}
	for i, k := range c.Rate {
		if k.Rate < 0 || (i > 0 && !k.At.After(c.Rate[i-1].At)) {
			return fmt.Errorf("client %q: rate knot %d negative or out of order", c.Name, i)
		}
	}
	return nil
}

func clientRate(c *ClientSpec) *plf {
	p := &plf{}
	for _, k := range c.Rate {
		p.add(k.At.UnixNano(), k.Rate)
	}
	return p
}

func (c *scheduledClient) fire(s *sim) {
	x := c.rng.Float64() * c.total
	req := &c.spec.Requests[len(c.spec.Requests)-1]
	for i := range c.spec.Requests {
		if x -= c.spec.Requests[i].Weight; x < 0 {
			req = &c.spec.Requests[i]
			break
		}
	}
	uri := req.URI
	if strings.Contains(uri, "%s") {
		t, _ := s.w.titles.pick(c.rng)
		uri = strings.Replace(uri, "%s", t, 1)
	}
	if strings.Contains(uri, "%d") {
		uri = strings.Replace(uri, "%d", strconv.Itoa(1000+c.rng.IntN(9000)), 1)
	}
	k := kindPage
	if req.JSON {
		k = kindAPI
	}
	ip := c.spec.IPs[c.rng.IntN(len(c.spec.IPs))]
	r := s.newReq(clsClient, k, c.prof, ip, randPort(c.rng), req.Method, uri, "")
	r.client = int8(c.index)
	ln := func(m float64) float64 { return m * math.Exp(0.5*c.rng.NormFloat64()) }
	cpu := ln(req.CPUS)
	r.cpu1, r.cpu2, r.wait = cpu*0.8, cpu*0.2, ln(req.WaitS)
	r.phpStatus, r.phpSize = 200, 800+c.rng.IntN(30000)
	if req.Status != 0 {
		r.phpStatus = req.Status
	}
	if req.Method == "POST" {
		r.bytesIn = 200 + c.rng.IntN(4000)
	}
	s.st.clientSent[c.index]++
	s.send(r)
}

func clientProfile(c *ClientSpec) *profile {
	accept := c.Accept
	if accept == "" {
		accept = AcceptBot
	}
	return &profile{ua: c.UserAgent, accept: accept, encoding: "gzip, deflate", proto: "HTTP/1.1", alpn: "http/1.1", auth: c.Auth}
}

// pinner opens idle connections straight to php-fpm's listener.
type pinner struct {
	spec *PinSpec
}

func pinRate(p *PinSpec) *plf {
	r := &plf{}
	from, to := p.From.UnixNano(), p.To.UnixNano()
	r.add(from-1, 0)
	r.add(from, p.Rate)
	r.add(to, p.Rate)
	r.add(to+1, 0)
	return r
}

// open is one idle connection: it queues like any connection (or is dropped
// when the backlog is full: the other proxy retries elsewhere) and, once a
// child accepts it, holds the child for HoldS without using CPU.
func (p *pinner) open(s *sim) {
	if s.fpm.down || s.fpm.queueLen() >= s.fpm.backlog {
		return
	}
	r := &request{cls: clsPinner, kind: kindAPI, method: "GET", uri: "/", start: s.now, wait: p.spec.HoldS,
		connected: true, connectAt: s.now, caddyDone: true}
	s.fpm.enqueue(s, r)
}
