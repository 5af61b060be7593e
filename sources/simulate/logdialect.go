package simulate

import (
	"strconv"
	"time"
)

// The access log's dialect (issue 25): what a site's logging configuration
// and the caches in front of PHP decide about a line, not the traffic. The
// scenarios were written with one dialect (ts in float Unix seconds, a
// page cache that says Cache-Status when it says anything); varyBySeed
// draws others, so that no detector can lean on the one it grew up with.

// LogTime is how the access log writes ts (Caddy's time_format).
type LogTime uint8

// ts encodings. The zero value is Caddy's default, the older scenarios'.
const (
	LogTimeUnixSeconds LogTime = iota // float seconds (unix_seconds_float)
	LogTimeUnixMilli                  // float milliseconds (unix_milli_float)
	LogTimeUnixNano                   // integer nanoseconds (unix_nano)
	LogTimeISO8601                    // iso8601, in the host's zone
	LogTimeRFC3339Nano                // rfc3339_nano, in the host's zone
)

// String names the encoding as Caddy's time_format does.
func (f LogTime) String() string {
	return [...]string{"unix_seconds_float", "unix_milli_float", "unix_nano", "iso8601", "rfc3339_nano"}[f]
}

// appendLogTS appends ns as the access log's ts under f; a string form is
// written in the host's zone (offsetS seconds east of UTC), as a server
// whose clock is set to local time writes it.
func appendLogTS(b []byte, ns int64, f LogTime, offsetS int) []byte {
	switch f {
	case LogTimeUnixMilli:
		return strconv.AppendFloat(b, float64(ns)/1e6, 'f', -1, 64)
	case LogTimeUnixNano:
		return strconv.AppendInt(b, ns, 10)
	case LogTimeISO8601, LogTimeRFC3339Nano:
		layout := "2006-01-02T15:04:05.000Z0700" // zap's ISO8601TimeEncoder
		if f == LogTimeRFC3339Nano {
			layout = time.RFC3339Nano
		}
		t := time.Unix(0, ns).In(time.FixedZone("", offsetS))
		b = append(b, '"')
		b = t.AppendFormat(b, layout)
		return append(b, '"')
	}
	return appendTS(b, ns)
}

// CacheMark is the response header with which the page cache in front of
// PHP (Scenario.CacheStatus names it) marks what it answered and what it
// passed on.
type CacheMark uint8

// Cache marks. The zero value is the older scenarios' (RFC 9211).
const (
	CacheMarkStatus CacheMark = iota // Cache-Status: NAME; hit / NAME; fwd=uri-miss
	CacheMarkXCache                  // X-Cache: HIT / MISS (Varnish, nginx, CDNs)
	CacheMarkAge                     // Age only: seconds since the copy was made, 0 on a miss
)

// String names the mark in truth.json.
func (m CacheMark) String() string {
	return [...]string{"Cache-Status", "X-Cache", "Age"}[m]
}

// appendCacheMark appends the cache's mark of a response to a request for
// uri at ns: served from the store (hit) or passed on to PHP.
func appendCacheMark(b []byte, first *bool, m CacheMark, name string, hit bool, uri string, ns int64) []byte {
	switch m {
	case CacheMarkXCache:
		if hit {
			return hdr(b, first, "X-Cache", "HIT")
		}
		return hdr(b, first, "X-Cache", "MISS")
	case CacheMarkAge:
		if !hit {
			return hdr(b, first, "Age", "0")
		}
		// The copy's age: somewhere in its lifetime (s-maxage 300), the
		// same for a URL within a few seconds.
		h := uint64(ns / 1e9 / 7)
		for i := 0; i < len(uri); i++ {
			h = (h ^ uint64(uri[i])) * 1099511628211
		}
		return hdr(b, first, "Age", strconv.FormatUint(1+h%299, 10))
	}
	if hit {
		return hdr(b, first, "Cache-Status", name+"; hit")
	}
	return hdr(b, first, "Cache-Status", name+"; fwd=uri-miss")
}
