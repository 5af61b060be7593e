// Package fpmlog reads php-fpm's own log for overload evidence that metrics may
// miss: "server reached pm.max_children" warnings and slow-request notices.
package fpmlog

import (
	"bufio"
	"fmt"
	"regexp"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// Event kinds.
const (
	MaxChildren = "max_children_reached"
	Slow        = "slow_request"
)

// Event is one overload line of php-fpm's log.
type Event struct {
	Time time.Time
	Pool string
	Kind string
}

// lineRe matches php-fpm's log prefix: "[29-Nov-2026 15:33:54] WARNING: [pool www] ...".
var lineRe = regexp.MustCompile(`^\[(\d{2}-[A-Za-z]{3}-\d{4} \d{2}:\d{2}:\d{2}(?:\.\d+)?)\] (\w+): (?:\[pool ([^\]]+)\] )?(.*)$`)

var (
	maxChildrenRe = regexp.MustCompile(`reached (?:pm\.)?max_children setting`)
	slowRe        = regexp.MustCompile(`executing too slow`)
)

// ReadFile parses a php-fpm log, plain or gzip-compressed. php-fpm writes local time without a zone, so
// the caller passes the zone the server logs in. found reports whether any line
// had php-fpm's shape (a file that has none is some other log).
func ReadFile(path string, loc *time.Location) (events []Event, found bool, err error) {
	r, err := sources.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("php-fpm log: %w", err)
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		m := lineRe.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		found = true
		var kind string
		switch {
		case maxChildrenRe.MatchString(m[4]):
			kind = MaxChildren
		case slowRe.MatchString(m[4]):
			kind = Slow
		default:
			continue
		}
		t, err := time.ParseInLocation("02-Jan-2006 15:04:05", m[1][:20], loc)
		if err != nil {
			continue
		}
		events = append(events, Event{Time: t, Pool: m[3], Kind: kind})
	}
	if err := sc.Err(); err != nil {
		return events, found, fmt.Errorf("php-fpm log %s: %w", path, err)
	}
	return events, found, nil
}
