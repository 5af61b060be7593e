package rules

import (
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
)

// Which site block of a Caddyfile served the logged requests: the zones are
// worth something only there. The Caddyfile is read as Caddy reads it
// (caddyfile.Parse: snippets and imports expanded, so a `log` or php_fastcgi
// that comes from a snippet counts), and each site block is weighed on what
// it does, never on its name:
//
//   - it hands requests to an application (php_fastcgi or reverse_proxy,
//     at any depth: inside route, handle, handle_path...);
//   - its addresses serve the Host headers the access log holds (request.host,
//     with the port when the client sent one);
//   - it writes an access log (a `log` directive): a site without one, or one
//     that turns logging off for everything (log_skip), wrote none of the
//     lines the zones were sized on;
//   - it listens beyond the loopback interface (a site bound to 127.0.0.1 only
//     is a status page or a sidecar, unless the evidence above says otherwise:
//     a lab's whole site may be bound to loopback behind a proxy).
//
// Each test narrows the candidates only when some candidate passes it; the
// one left is the serving site. Two or more left: no guess, the caller names
// one (--site).

// servingSite is one site block as Caddy parsed it, with what it does.
type servingSite struct {
	keys      []string // its addresses as written
	file      string   // where its block is (an imported file, possibly)
	line      int      // the line of its first address
	lastLine  int      // the line of its last address (that of its "{")
	addrs     []httpcaddyfile.Address
	app       bool // hands requests to php_fastcgi or reverse_proxy somewhere inside
	logs      bool // has a `log` directive and does not skip logging for every request
	loopback  bool // bound (or addressed) to the loopback interface only
	served    int  // logged requests whose Host it serves
	appWhat   string
	bindWhat  string
	logReason string
}

func (s *servingSite) name() string { return strings.Join(s.keys, " ") }

// describe says in a few words what the site is, for a refusal that names
// the candidates.
func (s *servingSite) describe(hostsKnown bool) string {
	var what []string
	if s.app {
		what = append(what, s.appWhat)
	} else {
		what = append(what, "no php_fastcgi or reverse_proxy")
	}
	what = append(what, s.logReason)
	if s.loopback {
		what = append(what, s.bindWhat)
	}
	if hostsKnown {
		what = append(what, fmt.Sprintf("serves %d logged requests by their Host", s.served))
	}
	return fmt.Sprintf("%s (%s:%d: %s)", s.name(), s.file, s.line, strings.Join(what, ", "))
}

// parseSites reads the site blocks of a Caddyfile as Caddy does (snippets
// and imports expanded; the global options block, snippets and named routes
// left out).
func parseSites(src []byte, filename string) ([]*servingSite, error) {
	blocks, err := caddyfile.Parse(filename, src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	var out []*servingSite
	for _, sb := range blocks {
		if len(sb.Keys) == 0 || sb.IsNamedRoute {
			continue
		}
		s := &servingSite{keys: sb.GetKeysText(), file: sb.Keys[0].File, line: sb.Keys[0].Line, lastLine: sb.Keys[len(sb.Keys)-1].Line, logReason: "no log directive"}
		for _, k := range s.keys {
			a, err := httpcaddyfile.ParseAddress(k)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: site address %q: %w", s.file, s.line, k, err)
			}
			s.addrs = append(s.addrs, a.Normalize())
		}
		var binds []string
		skipAll := false
		for _, seg := range sb.Segments {
			if len(seg) == 0 {
				continue
			}
			switch seg.Directive() {
			case "log":
				s.logs, s.logReason = true, "a log directive"
			case "bind":
				for _, t := range seg[1:] {
					if t.Line != seg[0].Line || t.Text == "{" {
						break
					}
					binds = append(binds, t.Text)
				}
			case "log_skip", "skip_log":
				// Without a matcher it skips every request.
				if len(seg) == 1 || seg[1].Line != seg[0].Line {
					skipAll = true
				}
			}
			for i, t := range seg {
				if t.Quoted() || (t.Text != "php_fastcgi" && t.Text != "reverse_proxy") {
					continue
				}
				if i == 0 || seg[i-1].Line != t.Line || seg[i-1].File != t.File || seg[i-1].Text == "{" {
					if !s.app {
						s.appWhat = t.Text
						if i+1 < len(seg) && seg[i+1].Line == t.Line && seg[i+1].Text != "{" {
							s.appWhat += " " + seg[i+1].Text
						}
					}
					s.app = true
				}
			}
		}
		if skipAll {
			s.logs, s.logReason = false, "log_skip for every request"
		}
		s.loopback, s.bindWhat = loopbackOnly(binds, s.addrs)
		out = append(out, s)
	}
	return out, nil
}

// loopbackOnly says whether a site listens on the loopback interface only:
// every bind address is a loopback one, or, with no bind, every address
// names a loopback host.
func loopbackOnly(binds []string, addrs []httpcaddyfile.Address) (bool, string) {
	if len(binds) > 0 {
		for _, b := range binds {
			host := b
			if i := strings.Index(host, "/"); i >= 0 && strings.Contains(host[:i], ":") {
				host = host[i+1:] // tcp/127.0.0.1
			}
			if !loopbackHost(host) {
				return false, ""
			}
		}
		return true, "bound to " + strings.Join(binds, " ")
	}
	for _, a := range addrs {
		if !loopbackHost(a.Host) {
			return false, ""
		}
	}
	return len(addrs) > 0, "addressed to the loopback host only"
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	ip, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && ip.IsLoopback()
}

// servesHost says whether a site address answers a request whose Host header
// was host (as logged: "wiki.example.org" or "wiki.example.org:8080").
func servesHost(a httpcaddyfile.Address, host string) bool {
	name, port := host, ""
	if h, p, err := net.SplitHostPort(host); err == nil {
		name, port = h, p
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	switch {
	case a.Host == "" || a.Host == "*":
	case strings.HasPrefix(a.Host, "*."):
		i := strings.Index(name, ".")
		if i < 0 || !strings.EqualFold(name[i:], a.Host[1:]) {
			return false
		}
	case !strings.EqualFold(a.Host, name):
		return false
	}
	if port == "" || a.Port == "" {
		// A Host header without a port says nothing about the listener
		// (clients and proxies leave the port out); a site address
		// without one listens on 80 and 443.
		return port == "" || port == "80" || port == "443"
	}
	return port == a.Port
}

// chooseServingSite picks the site block that served the logged requests
// (hosts: request.host -> count; empty when unknown), or says why it cannot.
func chooseServingSite(sites []*servingSite, filename string, hosts map[string]int) (*servingSite, string, error) {
	if len(sites) == 0 {
		return nil, "", fmt.Errorf("place: %s holds no site block", filename)
	}
	total := 0
	for _, s := range sites {
		s.served = 0
		for h, n := range hosts {
			for _, a := range s.addrs {
				if servesHost(a, h) {
					s.served += n
					break
				}
			}
		}
	}
	for _, n := range hosts {
		total += n
	}
	cands := sites
	var why []string
	narrow := func(keep func(*servingSite) bool, because string) {
		var kept []*servingSite
		for _, s := range cands {
			if keep(s) {
				kept = append(kept, s)
			}
		}
		if len(kept) > 0 && len(kept) < len(cands) {
			cands = kept
			why = append(why, because)
		}
	}
	if total > 0 {
		var kept []*servingSite
		for _, s := range cands {
			if s.served > 0 {
				kept = append(kept, s)
			}
		}
		if len(kept) == 0 {
			return nil, "", fmt.Errorf("place: no site block of %s serves the Host headers the access log holds (%s): name the site with --site", filename, topHosts(hosts, 3))
		}
		if len(kept) < len(cands) {
			cands = kept
			why = append(why, "it serves the logged Host headers ("+topHosts(hosts, 3)+")")
		}
	}
	narrow(func(s *servingSite) bool { return s.app }, "it hands requests to the application")
	narrow(func(s *servingSite) bool { return s.logs }, "it writes the access log (a log directive)")
	narrow(func(s *servingSite) bool { return !s.loopback }, "it listens beyond the loopback interface")
	if len(cands) == 1 {
		if len(sites) == 1 {
			return cands[0], "the only site block", nil
		}
		return cands[0], strings.Join(why, "; "), nil
	}
	var names []string
	for _, s := range cands {
		names = append(names, s.describe(total > 0))
	}
	return nil, "", fmt.Errorf("place: %s has %d site blocks that could have served the logged requests: %s; name one with --site (e.g. --site %q)",
		filename, len(cands), strings.Join(names, "; "), cands[0].keys[0])
}

// topHosts lists the n most logged Host headers with their counts.
func topHosts(hosts map[string]int, n int) string {
	type hc struct {
		h string
		n int
	}
	var all []hc
	for h, c := range hosts {
		all = append(all, hc{h, c})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].h < all[j].h
	})
	var out []string
	for i, x := range all {
		if i == n {
			out = append(out, fmt.Sprintf("and %d more", len(all)-n))
			break
		}
		out = append(out, fmt.Sprintf("%q: %d", x.h, x.n))
	}
	return strings.Join(out, ", ")
}
