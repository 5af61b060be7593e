package rules

import (
	"net/http"
	"slices"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// arrivalClass is what a tally needs of an arrival that no zone can refuse:
// whose fingerprint it has, whether it came from a reader who shares a
// crawler's fingerprint (readers.go; such an arrival has crawler -1), whether
// it was logged in, whether it reached PHP. It indexes classCounts:
// ((crawler+1)*2 + reader)*6 + login*2 + php.
type arrivalClass int

const loginStates = 3 // sources.LoggedInUnknown, No, Yes

func classOf(crawler int, reader bool, login sources.LoggedIn, php bool) arrivalClass {
	c := (crawler + 1) * 2
	if reader {
		c++
	}
	c = c*loginStates*2 + int(login)*2
	if php {
		c++
	}
	return arrivalClass(c)
}

func (c arrivalClass) crawler() int            { return int(c)/(loginStates*2)/2 - 1 }
func (c arrivalClass) reader() bool            { return int(c)/(loginStates*2)%2 == 1 }
func (c arrivalClass) login() sources.LoggedIn { return sources.LoggedIn(int(c) / 2 % loginStates) }
func (c arrivalClass) php() bool               { return c%2 == 1 }

// classCounts counts arrivals by arrivalClass.
type classCounts []int

func newClassCounts(crawlers int) classCounts { return make(classCounts, (crawlers+1)*2*loginStates*2) }

// reachedPHP says whether a request cost a PHP worker: answered by PHP, or a
// 504 still queued in php-fpm when the proxy gave up (it ran later).
func reachedPHP(r *sources.Request) bool {
	return r.Origin == sources.OriginUpstream || r.Origin == sources.OriginProxy && r.Status == http.StatusGatewayTimeout
}

// arrivalCounts counts the profile pass's arrivals (health checks excluded)
// by class and by stretch of time between cuts: the instants a replay's range
// can start or end at, known before the pass (the window's ends, the given
// baseline's, the earliest crawler onset). Any range between two cuts, or
// open past the first or last arrival, is then counted exactly: what
// baselineRange can return. The replay from a recording takes from these the
// arrivals it did not record (they matched no zone) instead of reading every
// line again.
type arrivalCounts struct {
	cuts        []int64       // sorted, distinct, unix nanoseconds
	stretches   []classCounts // len(cuts)+1: before cuts[0], between, after the last
	first, last int64         // the earliest and latest arrival counted
	any         bool
}

func newArrivalCounts(cuts []time.Time, crawlers int) *arrivalCounts {
	c := &arrivalCounts{}
	for _, t := range cuts {
		if !t.IsZero() {
			c.cuts = append(c.cuts, t.UnixNano())
		}
	}
	slices.Sort(c.cuts)
	c.cuts = slices.Compact(c.cuts)
	for range len(c.cuts) + 1 {
		c.stretches = append(c.stretches, newClassCounts(crawlers))
	}
	return c
}

// stretch returns the index of the stretch holding at: how many cuts are at or before it.
func (c *arrivalCounts) stretch(at int64) int {
	i, found := slices.BinarySearch(c.cuts, at)
	if found {
		i++
	}
	return i
}

func (c *arrivalCounts) add(at int64, class arrivalClass) {
	if !c.any || at < c.first {
		c.first = at
	}
	if !c.any || at > c.last {
		c.last = at
	}
	c.any = true
	c.stretches[c.stretch(at)][class]++
}

// move recounts n arrivals of stretch s from class from to class to: the
// profile learns who is a reader only once it has read every line.
func (c *arrivalCounts) move(s int, from, to arrivalClass, n int) {
	c.stretches[s][from] -= n
	c.stretches[s][to] += n
}

// in returns the counts of the arrivals in [from, to), or false when from or
// to is neither a cut nor beyond the arrivals (the counts cannot say).
func (c *arrivalCounts) in(from, to int64) (classCounts, bool) {
	out := make(classCounts, len(c.stretches[0]))
	if !c.any || from >= to {
		return out, true
	}
	lo, ok := 0, from <= c.first
	if i, found := slices.BinarySearch(c.cuts, from); !ok && found {
		lo, ok = i+1, true
	}
	if !ok {
		return nil, false
	}
	hi, ok := len(c.stretches), to > c.last
	if i, found := slices.BinarySearch(c.cuts, to); !ok && found {
		hi, ok = i+1, true
	}
	if !ok {
		return nil, false
	}
	for s := lo; s < hi; s++ {
		for class, n := range c.stretches[s] {
			out[class] += n
		}
	}
	return out, true
}
