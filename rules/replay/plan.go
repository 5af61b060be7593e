package replay

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/rules/replay/replayreport"
	"github.com/aftermath-forensics/aftermath/sources"
)

// Only restricts a replay to part of the traffic.
type Only string

const (
	OnlyAll     Only = ""
	OnlyCrawler Only = "crawler"
	OnlyOthers  Only = "others"
)

// Shot is one request to fire: when (after the start, in replay time), what,
// and from whom.
type Shot struct {
	// Offset is when to send it, measured from the replay's start: the
	// recorded arrival's offset from the window's start divided by the speed.
	Offset time.Duration
	// Arrival is the recorded arrival (log time minus duration).
	Arrival time.Time
	Request sources.Request
	Class   replayreport.Class
}

// Plan is the schedule of a replay and what was left out of it.
type Plan struct {
	From, To time.Time
	Speed    float64
	Only     Only
	Shots    []Shot
	// CrawlerKeys are the fingerprints counted as the crawler.
	CrawlerKeys []request.ClusterKey
	// Left out, counted: health checks (the staging proxy runs its own),
	// requests of the class --only excluded, and requests beyond MaxRequests.
	HealthChecks  int
	Excluded      int
	OverLimit     int
	ClientsByPlan int // distinct recorded client addresses in the schedule
	// LoggedInCookie is the site's logged-in pattern: logged-in requests carry
	// a placeholder cookie holding it.
	LoggedInCookie string
}

// RequestReader hands over requests in batches (accesslog.Spill.Read, or
// accesslog.Read with a sink).
type RequestReader func(ctx context.Context, sink func([]sources.Request) error) error

// PlanOptions says what to schedule.
type PlanOptions struct {
	From, To time.Time
	Speed    float64
	Only     Only
	// Findings supply the crawler fingerprints (crawler_burst findings).
	Findings []detect.Finding
	Site     sources.Site
	// MaxRequests bounds the schedule; the earliest arrivals are kept.
	MaxRequests int
}

// NewPlan reads the requests and schedules those that arrived in [From, To).
// Memory grows with the requests scheduled, which MaxRequests bounds.
func NewPlan(ctx context.Context, read RequestReader, o PlanOptions) (*Plan, error) {
	if !o.To.After(o.From) {
		return nil, fmt.Errorf("replay: window %s to %s is empty", o.From.Format(time.RFC3339), o.To.Format(time.RFC3339))
	}
	if o.Speed <= 0 {
		return nil, fmt.Errorf("replay: speed %g must be positive", o.Speed)
	}
	if o.MaxRequests <= 0 {
		return nil, fmt.Errorf("replay: MaxRequests %d must be positive", o.MaxRequests)
	}
	p := &Plan{From: o.From, To: o.To, Speed: o.Speed, Only: o.Only, LoggedInCookie: o.Site.LoggedInCookie}
	crawler := map[request.ClusterKey]bool{}
	for _, f := range o.Findings {
		if f.Kind == detect.KindCrawlerBurst && f.Cluster != nil && !crawler[*f.Cluster] {
			crawler[*f.Cluster] = true
			p.CrawlerKeys = append(p.CrawlerKeys, *f.Cluster)
		}
	}
	var keys request.Keyer
	err := read(ctx, func(batch []sources.Request) error {
		for i := range batch {
			r := &batch[i]
			at := r.Start()
			if at.Before(o.From) || !at.Before(o.To) {
				continue
			}
			// The staging proxy runs its own active health checks; the backtest
			// leaves them out for the same reason.
			if o.Site.HealthURI != "" && r.Path == o.Site.HealthURI {
				p.HealthChecks++
				continue
			}
			c := replayreport.ClassOtherLoggedOut
			switch {
			case crawler[keys.Key(r)]:
				c = replayreport.ClassCrawler
			case r.LoggedIn == sources.LoggedInYes:
				c = replayreport.ClassLoggedIn
			}
			if (o.Only == OnlyCrawler && c != replayreport.ClassCrawler) || (o.Only == OnlyOthers && c == replayreport.ClassCrawler) {
				p.Excluded++
				continue
			}
			p.Shots = append(p.Shots, Shot{Arrival: at, Request: *r, Class: c})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("replay: reading the requests: %w", err)
	}
	sort.SliceStable(p.Shots, func(i, j int) bool { return p.Shots[i].Arrival.Before(p.Shots[j].Arrival) })
	if len(p.Shots) > o.MaxRequests {
		p.OverLimit = len(p.Shots) - o.MaxRequests
		p.Shots = p.Shots[:o.MaxRequests]
	}
	clients := map[netip.Addr]struct{}{}
	for i := range p.Shots {
		s := &p.Shots[i]
		s.Offset = time.Duration(float64(s.Arrival.Sub(o.From)) / o.Speed)
		clients[s.Request.ClientIP] = struct{}{}
	}
	p.ClientsByPlan = len(clients)
	return p, nil
}

// Duration is how long the schedule lasts in replay time.
func (p *Plan) Duration() time.Duration {
	return time.Duration(float64(p.To.Sub(p.From)) / p.Speed)
}
