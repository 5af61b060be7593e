// Package caddylog reads Caddy's own (non-access) log for what the access log
// cannot show: active health check failures, recoveries and "no upstreams
// available" errors.
package caddylog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// maxLine bounds one log line; Caddy's own lines are short.
const maxLine = 1 << 20

type line struct {
	TS     float64 `json:"ts"`
	Logger string  `json:"logger"`
	Msg    string  `json:"msg"`
	Host   string  `json:"host"`
	Error  string  `json:"error"`
}

// ReadFile returns the health events of one Caddy log (plain or gzip). Lines
// that are not JSON are counted in skips; other loggers are ignored, as they are
// not health evidence. found reports whether the file looked like Caddy's log.
func ReadFile(path string, skips *sources.Skips) (events []sources.HealthEvent, found bool, err error) {
	r, err := sources.Open(path)
	if err != nil {
		return nil, false, fmt.Errorf("caddy log: %w", err)
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxLine)
	n := 0
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(b, &l); err != nil || l.TS == 0 {
			skips.Add("not a Caddy JSON log line", fmt.Sprintf("%s:%d", path, n))
			continue
		}
		found = true
		sec, frac := math.Modf(l.TS)
		ev := sources.HealthEvent{Time: time.Unix(int64(sec), int64(frac*1e9)).UTC(), Upstream: l.Host, Error: l.Error}
		switch {
		case strings.HasSuffix(l.Logger, "health_checker.active") && l.Msg == "host is up":
			ev.Kind = sources.HealthUp
		case strings.HasSuffix(l.Logger, "health_checker.active") && (l.Msg == "host is down" || l.Msg == "unhealthy"):
			ev.Kind = sources.HealthDown
		case strings.HasSuffix(l.Logger, "health_checker.active") && l.Error != "":
			ev.Kind = sources.HealthFailed
		case strings.HasPrefix(l.Logger, "http.log.error") && l.Msg == "no upstreams available":
			ev.Kind = sources.NoUpstream
		default:
			continue
		}
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		skips.Add(fmt.Sprintf("unreadable rest of file (%v)", err), fmt.Sprintf("%s:%d", path, n+1))
	}
	return events, found, nil
}
