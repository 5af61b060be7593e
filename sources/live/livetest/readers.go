package livetest

import (
	"fmt"
	"time"
)

// Push logs one request: its time, client address, user agent,
// Accept-Language, target, status and duration (seconds). A fake's test
// writes it to its log (a fake Loki's stream, a file).
type Push func(ts time.Time, ip, ua, lang, uri string, status int, dur float64)

// readerAgents are the readers' browsers and languages, taken in turn.
var readerAgents = [...]struct{ ua, lang string }{
	{"Mozilla/5.0 (X11; Linux x86_64; rv:131.0) Gecko/20100101 Firefox/131.0", "en-US,en;q=0.8"},
	{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/129.0.0.0 Safari/537.36", "ko-KR,ko;q=0.9"},
}

// Readers pushes minute m's ordinary traffic: 30 readers' article views,
// answered in 50-100 ms, from 16,384 addresses; rnd(n) draws in [0, n).
func Readers(m time.Time, rnd func(n int64) int64, push Push) {
	for k := range 30 {
		ts := m.Add(time.Duration(rnd(int64(time.Minute))))
		r := readerAgents[k%len(readerAgents)]
		push(ts, fmt.Sprintf("203.0.%d.%d", rnd(64), rnd(256)), r.ua, r.lang, fmt.Sprintf("/wiki/Article_%d", rnd(500)), 200, 0.05+float64(rnd(50))/1000)
	}
}
