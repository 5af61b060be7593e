package request

import (
	"net/netip"

	"github.com/aftermath-forensics/aftermath/sources"
)

// ClusterKey is a client fingerprint without the path: what a rate limit or a
// human would use to say "these requests come from the same kind of client".
type ClusterKey struct {
	// UA is the user-agent family ("Chrome"). Major versions are kept per
	// cluster, not in the key: crawlers rotate versions (the lab's walked with
	// Chrome 119, 120 and 121) and are still one client.
	UA       string
	Lang     string // primary Accept-Language, "" if none
	LoggedIn sources.LoggedIn
	// NoClientHints is true for a Chromium UA that sent no Sec-Ch-Ua over HTTPS:
	// a forged agent. Over plain HTTP browsers send no hints, so it stays false.
	NoClientHints bool
}

// Agent is what detect.Traffic.Observe needs of a user agent.
type Agent struct {
	family, Version string
	chromium        bool
}

// maxAgents bounds a Keyer's cache of user agents (a variable for tests).
var maxAgents = 4096

// Key computes the fingerprint of a request.
func Key(r *sources.Request) ClusterKey {
	family, _ := SplitFamily(UAFamily(r.UserAgent))
	return Agent{family: family, chromium: chromium(family)}.Key(r)
}

// Key is the fingerprint of request r sent by user agent a.
func (a Agent) Key(r *sources.Request) ClusterKey {
	return ClusterKey{UA: a.family, Lang: r.Lang, LoggedIn: r.LoggedIn, NoClientHints: r.TLS && a.chromium && !r.SecChUa}
}

// Keyer computes Key with a bounded cache of user agents: a pass over millions
// of requests computes each distinct agent's family once. The zero value is
// ready; it is not safe for concurrent use.
type Keyer struct {
	agents map[string]Agent
	// last is the agent asked for last, lastUA its user agent: a client's
	// requests come in runs (a page, then its assets), and two in three of
	// the benchmark log's requests have the agent of the one before, whose
	// comparison costs less than hashing the agent for the map.
	last   Agent
	lastUA string
	inLast bool
	// byAddress remembers the agents of the user agents seen lately, found
	// by where their bytes are (the parser interns a user agent's string).
	byAddress AddressMemo[Agent]
}

// Key returns the same fingerprint as the function Key.
func (k *Keyer) Key(r *sources.Request) ClusterKey {
	return k.Agent(r.UserAgent).Key(r)
}

// Agent returns the family, version and Chromium-ness of ua, as Key computes them.
func (k *Keyer) Agent(ua string) Agent {
	if k.inLast && ua == k.lastUA {
		return k.last
	}
	a, remembered := k.byAddress.Slot(ua)
	if !remembered {
		got, ok := k.agents[ua]
		if !ok {
			got = k.add(ua)
		}
		*a = got
	}
	k.last, k.lastUA, k.inLast = *a, ua, true
	return *a
}

// add computes the agent of ua and keeps it in the bounded cache.
func (k *Keyer) add(ua string) Agent {
	family, version := SplitFamily(UAFamily(ua))
	a := Agent{family: family, Version: version, chromium: chromium(family)}
	if k.agents == nil {
		k.agents = map[string]Agent{}
	} else if len(k.agents) >= maxAgents {
		clear(k.agents)
	}
	k.agents[ua] = a
	return a
}

// Prefix is the network a per-prefix limit would group an address into: /24 for
// IPv4, /64 for IPv6.
func Prefix(a netip.Addr) netip.Prefix {
	bits := 64
	if a.Is4() || a.Is4In6() {
		a = a.Unmap()
		bits = 24
	}
	p, _ := a.Prefix(bits)
	return p
}

// loggedInText says a login state for humans.
func loggedInText(l sources.LoggedIn) string {
	switch l {
	case sources.LoggedInYes:
		return "logged in"
	case sources.LoggedInNo:
		return "logged out"
	}
	return "login unknown"
}

// String renders a fingerprint for humans: "Chrome 121 / zh-cn / logged out / no client hints".
func (k ClusterKey) String() string {
	lang := k.Lang
	if lang == "" {
		lang = "no language"
	}
	s := k.UA + " / " + lang + " / " + loggedInText(k.LoggedIn)
	if k.NoClientHints {
		s += " / no client hints"
	}
	return s
}
