package livetest

import (
	"fmt"
	"time"
)

// WalkingCrawler is a crawler that walks slowly before it bursts: from Walk
// it sends a few requests a minute, growing from 2 to 20 until Burst, then
// 400 a minute until End, 40% of them answered 503 at once. Every request
// comes from a fresh address. Under a pushdown only the burst and its margin
// stand out, so an analysis estimates the crawler's start and asks for a
// second pass over the walk.
type WalkingCrawler struct {
	Walk, Burst, End time.Time
}

// WalkingCrawlerAgent is the crawler's user agent, an ordinary browser's.
const WalkingCrawlerAgent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"

// Push pushes the crawler's requests of minute m; rnd(n) draws in [0, n).
func (c WalkingCrawler) Push(m time.Time, rnd func(n int64) int64, push Push) {
	n := 0
	switch {
	case !m.Before(c.Burst) && m.Before(c.End):
		n = 400
	case !m.Before(c.Walk) && m.Before(c.Burst):
		// A walk that grows: a crawl's rise starts where it began to
		// grow, not at a later step out of a flat walk.
		n = 2 + int(18*m.Sub(c.Walk)/c.Burst.Sub(c.Walk))
	}
	for range n {
		ts := m.Add(time.Duration(rnd(int64(time.Minute))))
		status, dur := 200, 2.0+float64(rnd(8000))/1000
		if n > 20 && rnd(10) < 4 {
			status, dur = 503, 0.0002
		}
		push(ts, fmt.Sprintf("%d.%d.%d.%d", 36+rnd(80), rnd(256), rnd(256), 1+rnd(254)), WalkingCrawlerAgent, "zh-CN,zh;q=0.9",
			fmt.Sprintf("/index.php?title=Page_%d&action=history", rnd(100000)), status, dur)
	}
}
