// Command loadgen drives the recording's site open-loop: Poisson arrivals at
// a rate that follows the phases given, each request from one of a crowd of
// loopback source addresses (so Caddy logs them as distinct clients), with a
// client that gives up after 10 s. It writes one CSV line per request
// (send time, address, path, status, latency) for the truth.
package main

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

type phase struct {
	secs     float64
	from, to float64 // requests per second at the phase's start and end
}

func parsePhases(s string) ([]phase, error) {
	var ps []phase
	for _, f := range strings.Split(s, ",") {
		p := strings.Split(f, ":")
		if len(p) != 3 {
			return nil, fmt.Errorf("phase %q: want SECONDS:FROM:TO", f)
		}
		var v [3]float64
		for i := range p {
			x, err := strconv.ParseFloat(p[i], 64)
			if err != nil {
				return nil, fmt.Errorf("phase %q: %w", f, err)
			}
			v[i] = x
		}
		ps = append(ps, phase{v[0], v[1], v[2]})
	}
	return ps, nil
}

var agents = []string{
	"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
	"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
	"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
	"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
}

func main() {
	target := flag.String("target", "http://127.0.0.1:18080", "site")
	phases := flag.String("phases", "90:2:2,20:2:9,300:9:9,40:2:2", "SECONDS:FROM:TO rate phases")
	crowd := flag.Int("crowd", 400, "distinct client addresses")
	seed := flag.Int64("seed", 1, "random seed")
	out := flag.String("out", "requests.csv", "CSV of every request")
	flag.Parse()
	ps, err := parsePhases(*phases)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	w := csv.NewWriter(f)
	w.Write([]string{"send_unix_ms", "ip", "path", "status", "latency_ms", "error"})
	var mu sync.Mutex
	var wg sync.WaitGroup
	rng := rand.New(rand.NewSource(*seed))
	start := time.Now()
	next := 0.0 // seconds since start of the next arrival
	offset := 0.0
	for _, p := range ps {
		for next < offset+p.secs {
			frac := (next - offset) / p.secs
			rate := p.from + (p.to-p.from)*frac
			if rate <= 0 {
				next = offset + p.secs
				break
			}
			at := start.Add(time.Duration(next * float64(time.Second)))
			time.Sleep(time.Until(at))
			n := rng.Intn(*crowd)
			ip := net.IPv4(127, 10, byte(n/250), byte(1+n%250))
			path := fmt.Sprintf("/a/article-%d", rng.Intn(500))
			ua := agents[n%len(agents)]
			wg.Add(1)
			go func(ip net.IP, path, ua string) {
				defer wg.Done()
				dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 10 * time.Second}
				client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dialer.DialContext, DisableKeepAlives: true}}
				req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, *target+path, nil)
				req.Header.Set("User-Agent", ua)
				req.Header.Set("Accept", "text/html,application/xhtml+xml")
				req.Header.Set("Accept-Language", "en-US,en;q=0.9")
				t0 := time.Now()
				resp, err := client.Do(req)
				status, msg := 0, ""
				if err != nil {
					msg = err.Error()
				} else {
					status = resp.StatusCode
					resp.Body.Close()
				}
				mu.Lock()
				w.Write([]string{strconv.FormatInt(t0.UnixMilli(), 10), ip.String(), path, strconv.Itoa(status), strconv.FormatInt(time.Since(t0).Milliseconds(), 10), msg})
				mu.Unlock()
			}(ip, path, ua)
			next += rng.ExpFloat64() / rate
		}
		offset += p.secs
	}
	wg.Wait()
	w.Flush()
	f.Close()
}
