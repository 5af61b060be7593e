package livetest

import "sync"

// Phases keeps the last progress report of each phase of a fetch, in the
// order the phases began: a fetch's progress carries its phase's running
// totals, so the last report of a phase is what it cost. P is the live
// package's Progress (livetest cannot import the package whose tests use
// it). The zero value is ready to use, from any goroutine.
type Phases[P any] struct {
	mu    sync.Mutex
	order []string
	last  map[string]P
}

// Keep makes pr the last report of phase.
func (p *Phases[P]) Keep(phase string, pr P) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[string]P{}
	}
	if _, ok := p.last[phase]; !ok {
		p.order = append(p.order, phase)
	}
	p.last[phase] = pr
}

// Each calls f with each phase's last report, in the order the phases began.
// The reports are read under the lock (a Keep may still be running: the map
// is not read outside it), f is called after.
func (p *Phases[P]) Each(f func(phase string, last P)) {
	p.mu.Lock()
	order := p.order
	last := make([]P, len(order))
	for i, k := range order {
		last[i] = p.last[k]
	}
	p.mu.Unlock()
	for i, k := range order {
		f(k, last[i])
	}
}
