package accesslog

import "hash/maphash"

// A uriCache holds the strings of the request targets parsed lately, so
// that a target that comes again (a popular page, an asset, a client's
// retries) is not copied into a new string: on the 256 MB benchmark log a
// string per line was the parser's largest allocation, a sixth of all the
// bytes the analysis allocates. It is a fixed table indexed by a hash of the
// target, a newer target taking its slot, so that its memory is bounded
// whatever the log: a client varying its URLs costs an allocation per line,
// as before, never memory.
//
// A string handed out is never changed (a slot is replaced, not written
// into), so the Requests holding it may keep it as long as they like.
type uriCache struct {
	slots []string
	seed  maphash.Seed
}

// uriSlots is the size of a uriCache (a power of two): 64 KiB of slots,
// and the targets they hold.
const uriSlots = 1 << 12

// maxCachedURI is the longest target a uriCache keeps: a longer one is
// rare, and would hold its slot's memory for the one line.
const maxCachedURI = 512

// get returns b as a string, the one a slot holds if it is b.
func (c *uriCache) get(b []byte) string {
	if len(b) > maxCachedURI {
		return string(b)
	}
	if c.slots == nil {
		c.slots = make([]string, uriSlots)
		c.seed = maphash.MakeSeed()
	}
	s := &c.slots[maphash.Bytes(c.seed, b)&(uriSlots-1)]
	if *s != string(b) {
		*s = string(b)
	}
	return *s
}
