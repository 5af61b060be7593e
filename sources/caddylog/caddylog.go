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
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fastjson"

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
	var p fastjson.Parser
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		l, err := decode(&p, b)
		if err != nil || l.TS == 0 {
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

// decode reads a line's fields as encoding/json.Unmarshal into a line does.
// A line as Caddy writes it is read with fastjson: encoding/json checked and
// decoded the whole of each line, the request of every "no upstreams
// available" error included, three times as slowly. A line fastjson does
// not read plainly is left to encoding/json, whose result this is.
func decode(p *fastjson.Parser, b []byte) (line, error) {
	if l, ok := decodePlain(p, b); ok {
		return l, nil
	}
	var l line
	err := json.Unmarshal(b, &l)
	return l, err
}

// decodePlain reads a line that fastjson validates and whose fields are
// plain: each key at most once and spelled as line's tags (encoding/json
// would also take "TS" or "Msg"), ts a number that fits a float64, the
// others strings that need no repair (valid UTF-8, no \u escape, which
// encoding/json turns into U+FFFD when it is half a surrogate pair), or
// null (which leaves a field as it was, as for encoding/json). ok is false
// for any other line: decode then uses encoding/json.
func decodePlain(p *fastjson.Parser, b []byte) (l line, ok bool) {
	if bytes.Contains(b, []byte(`\u`)) || fastjson.ValidateBytes(b) != nil {
		return line{}, false
	}
	v, err := p.ParseBytes(b)
	if err != nil {
		return line{}, false
	}
	o, err := v.Object()
	if err != nil {
		return line{}, false
	}
	ok = true
	var seen [5]bool
	o.Visit(func(k []byte, v *fastjson.Value) {
		i := -1
		for j, name := range [...]string{"ts", "logger", "msg", "host", "error"} {
			if string(k) == name {
				i = j
				break
			}
			if bytes.EqualFold(k, []byte(name)) {
				ok = false
				return
			}
		}
		if i < 0 || !ok {
			return
		}
		if seen[i] {
			ok = false
			return
		}
		seen[i] = true
		switch v.Type() {
		case fastjson.TypeNull:
			return
		case fastjson.TypeNumber:
			if i != 0 {
				ok = false
				return
			}
			f, err := strconv.ParseFloat(string(v.MarshalTo(nil)), 64)
			if err != nil {
				ok = false
				return
			}
			l.TS = f
		case fastjson.TypeString:
			sb, _ := v.StringBytes()
			if i == 0 || !utf8.Valid(sb) {
				ok = false
				return
			}
			switch s := string(sb); i {
			case 1:
				l.Logger = s
			case 2:
				l.Msg = s
			case 3:
				l.Host = s
			case 4:
				l.Error = s
			}
		default:
			ok = false
		}
	})
	return l, ok
}
