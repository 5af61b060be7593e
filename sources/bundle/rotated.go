package bundle

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// accessName matches the names an access log has once a trailing ".gz" is
// removed: a stem ending in .log, .jsonl or .json, and optionally what a
// rotation adds after it: logrotate's number (access.log.1) or date
// (dateext: access.log-20261119, access.log-2026-11-19-1731999999).
// Caddy's own rolling puts the time before the extension
// (access-2026-11-19T10-17-04.475.log), which the stem already allows.
var accessName = regexp.MustCompile(`^(.*?\.(?:log|jsonl|json))(?:\.(\d+)|-(\d[\dT_:.-]*))?$`)

// rotatedLog is one access log file and where it sits in its rotation.
type rotatedLog struct {
	path string
	stem string // the live file's name: access.log
	// generation orders the files of one stem oldest first: logrotate's
	// number counts back from the live file (.2 is older than .1), dates
	// count forward, the live file is last.
	number int    // logrotate's number, 0 when none
	date   string // logrotate's date suffix, "" when none
}

// older reports whether a sorts before b: by stem, then oldest first.
func (a rotatedLog) older(b rotatedLog) bool {
	if a.stem != b.stem {
		return a.stem < b.stem
	}
	rank := func(r rotatedLog) int {
		switch {
		case r.number > 0:
			return 0
		case r.date != "":
			return 1
		}
		return 2
	}
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra < rb
	}
	if a.number != b.number {
		return a.number > b.number
	}
	if a.date != b.date {
		return a.date < b.date
	}
	return a.path < b.path
}

// ListAccessLogs lists the access logs in dir/sub (sub may be ""): files
// named as Caddy writes and rotates them (*.log, *.jsonl, *.json), as
// logrotate rotates them (access.log.1, access.log.2.gz,
// access.log-20261119.gz) or as Caddy rolls them
// (access-2026-11-19T10-17-04.475.log.gz), plain or gzipped. They come
// oldest first within each log (the live file last), so that the time of
// the lines read goes forward. skipped names the other regular files, which
// are not read: the caller says so.
func ListAccessLogs(dir, sub string) (logs, skipped []string, err error) {
	entries, err := os.ReadDir(filepath.Join(dir, sub))
	if os.IsNotExist(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	var found []rotatedLog
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, sub, e.Name())
		m := accessName.FindStringSubmatch(strings.TrimSuffix(e.Name(), ".gz"))
		if m == nil {
			skipped = append(skipped, path)
			continue
		}
		r := rotatedLog{path: path, stem: m[1], date: m[3]}
		if m[2] != "" {
			if r.number, err = strconv.Atoi(m[2]); err != nil || r.number == 0 {
				// access.log.0 or a number too long: still read, after the
				// numbered ones.
				r.number = 0
			}
		}
		found = append(found, r)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].older(found[j]) })
	for _, r := range found {
		logs = append(logs, r.path)
	}
	sort.Strings(skipped)
	return logs, skipped, nil
}
