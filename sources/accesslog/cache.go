package accesslog

import (
	"bytes"

	"github.com/aftermath-forensics/aftermath/sources"
)

// The words the cache verdict reads, exported so that a count made elsewhere
// (Loki's, under pushdown) is built from the same rule.
const (
	// The response headers a cache writes, matched case-insensitively.
	CacheStatusHeader = "Cache-Status" // RFC 9211
	XCacheHeader      = "X-Cache"      // Varnish, Squid, CDNs
	AgeHeader         = "Age"          // RFC 9111
	// CacheStatusHit is the Cache-Status parameter saying a cache served a
	// stored response (bare, hit=?1, or with a quoted value).
	CacheStatusHit = "hit"
	// CacheStatusKey and CacheStatusDetail are the Cache-Status parameters
	// whose bare value holds the requested URL: nothing after one is read.
	CacheStatusKey    = "key"
	CacheStatusDetail = "detail"
	// An X-Cache entry whose first word (upper-cased, at most XCacheMaxWord
	// bytes) holds XCacheHit, or is XCacheStale or XCacheUpdating, says a
	// stored response was served.
	XCacheHit      = "HIT"
	XCacheStale    = "STALE"
	XCacheUpdating = "UPDATING"
	XCacheMaxWord  = 32
)

// cacheEvidence collects what a line's response headers say about a cache in
// front of PHP. Both parsers feed it the values of Cache-Status (RFC 9211),
// X-Cache (Varnish, Squid, CDNs) and Age, in any order and any number of
// times; the verdict is hit when any of them says a stored response was
// served, miss when one says the request went on to the origin and none says
// hit. A hit anywhere means PHP did not run for the request: a cache nearer
// the origin answered even if one nearer the client missed.
type cacheEvidence struct {
	hit, miss bool
}

func (c cacheEvidence) verdict() sources.Cache {
	switch {
	case c.hit:
		return sources.CacheHit
	case c.miss:
		return sources.CacheMiss
	}
	return sources.CacheUnknown
}

// cacheHeader tells which cache header a response header name is (0: none).
func cacheHeader(name []byte) byte {
	switch len(name) {
	case len(CacheStatusHeader):
		if foldCacheStatus.is(name) {
			return 's'
		}
	case len(XCacheHeader):
		if foldXCache.is(name) {
			return 'x'
		}
	case len(AgeHeader):
		if equalFoldSameLength(name, AgeHeader) {
			return 'a'
		}
	}
	return 0
}

// add reads one value of the header that cacheHeader named.
func (c *cacheEvidence) add(header byte, v []byte) {
	switch header {
	case 's':
		c.cacheStatus(v)
	case 'x':
		c.xCache(v)
	case 'a':
		c.age(v)
	}
}

// cacheStatus reads an RFC 9211 Cache-Status value: a list of caches, each
// with parameters, of which "hit" says the cache answered and "fwd" says why
// it went on to the origin. The reading is lenient where real caches are
// not strict (Souin writes its key= parameter as a bare URL, which RFC 9651
// does not allow, so a strict parser refuses its every line), and careful
// where the text is the client's: a bare key= or detail= value holds the
// requested URL, so nothing after it is read ("?x=;hit" in a crawler's URL
// must not make its requests cache hits). A quoted value is read to its
// closing quote.
func (c *cacheEvidence) cacheStatus(v []byte) {
	i := 0
	sp := func() {
		for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
			i++
		}
	}
	// bare reads an unquoted item up to the next ';' or ','.
	bare := func() []byte {
		start := i
		for i < len(v) && v[i] != ';' && v[i] != ',' {
			i++
		}
		return bytes.TrimRight(v[start:i], " \t")
	}
	// quoted skips a quoted string; false when it does not end.
	quoted := func() bool {
		for i++; i < len(v); i++ {
			switch v[i] {
			case '\\':
				i++
			case '"':
				i++
				return true
			}
		}
		return false
	}
	for {
		sp()
		if i >= len(v) {
			return
		}
		// The cache's name: a string or a token.
		if v[i] == '"' {
			if !quoted() {
				return
			}
		} else {
			bare()
		}
		for {
			sp()
			if i >= len(v) || v[i] != ';' {
				break
			}
			i++
			sp()
			start := i
			for i < len(v) && v[i] != '=' && v[i] != ';' && v[i] != ',' {
				i++
			}
			name := bytes.TrimRight(v[start:i], " \t")
			var val []byte
			if i < len(v) && v[i] == '=' {
				i++
				if i < len(v) && v[i] == '"' {
					if !quoted() {
						return
					}
				} else {
					if equalFold(name, CacheStatusKey) || equalFold(name, CacheStatusDetail) {
						return
					}
					val = bare()
				}
			}
			switch {
			case equalFold(name, CacheStatusHit) && (val == nil || string(val) == "?1"):
				c.hit = true
			case equalFold(name, "fwd"):
				c.miss = true
			}
		}
		if i >= len(v) || v[i] != ',' {
			return // the list ends, or is not one: stop rather than guess
		}
		i++
	}
}

// xCache reads an X-Cache value: one word per cache, nearest the origin
// first ("MISS, HIT" from a CDN whose shield missed and edge hit; "HIT from
// varnish", "Hit from cloudfront", Squid's "TCP_MEM_HIT"). Only each
// entry's first word is read: what follows names a host.
func (c *cacheEvidence) xCache(v []byte) {
	for entry := range bytes.SplitSeq(v, []byte(",")) {
		word := bytes.TrimSpace(entry)
		if i := bytes.IndexAny(word, " \t"); i >= 0 {
			word = word[:i]
		}
		var up [XCacheMaxWord]byte
		if len(word) > len(up) {
			continue
		}
		for i, b := range word {
			if 'a' <= b && b <= 'z' {
				b -= 'a' - 'A'
			}
			up[i] = b
		}
		w := up[:len(word)]
		switch {
		// Served from the store, stale or while it refreshes (nginx's
		// STALE and UPDATING): the origin did not answer this request.
		case bytes.Contains(w, []byte(XCacheHit)), bytes.Equal(w, []byte(XCacheStale)), bytes.Equal(w, []byte(XCacheUpdating)):
			c.hit = true
		// Went to the origin: a miss, a pass or bypass, an expired entry
		// refetched, a revalidation the origin answered.
		case bytes.Contains(w, []byte("MISS")), bytes.Contains(w, []byte("PASS")),
			bytes.Equal(w, []byte("EXPIRED")), bytes.Equal(w, []byte("REVALIDATED")):
			c.miss = true
		}
	}
}

// age reads an Age value: seconds since the origin made the response
// (RFC 9111). PHP does not send it; a cache does, above zero when it served
// a stored copy and zero when it has just fetched one.
func (c *cacheEvidence) age(v []byte) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return
	}
	zero := true
	for _, b := range v {
		if b < '0' || b > '9' {
			return
		}
		zero = zero && b == '0'
	}
	if zero {
		c.miss = true
	} else {
		c.hit = true
	}
}
