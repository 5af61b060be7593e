package detect

import (
	"math"
	"testing"
	"time"
)

// TestPinningStartsWhenWorkersWereTaken: idle connections take a worker
// every few seconds, and nothing fails until the last one is taken, so the
// first failure (the incident's onset) is the end of the taking, not its
// start. The finding starts where the busy workers left their usual level
// and climbed without a break into the stall. The obvious answers are wrong
// both ways: the onset is minutes late, and the earliest busy moment in the
// half hour before (an ordinary spike that fell back) is not the start.
func TestPinningStartsWhenWorkersWereTaken(t *testing.T) {
	climb := func(from time.Duration) func(time.Duration) float64 {
		// Usual: one busy worker. From t0+from the pinning takes one more
		// every 12 s until all 16 are held at t0 (offsets from t0-1h).
		return func(off time.Duration) float64 {
			at := off - time.Hour
			switch {
			case at >= 0 && at < 40*time.Minute:
				return 16
			case at >= from && at < 0:
				return min(16, 1+float64((at-from)/(12*time.Second)))
			}
			return 1
		}
	}
	tests := []struct {
		name   string
		active func(time.Duration) float64
		want   time.Duration // the finding's start, from t0
	}{
		{"taken one by one over 3 minutes", climb(-3 * time.Minute), -3*time.Minute + 15*time.Second},
		{"a spike 10 minutes before that fell back", func(off time.Duration) float64 {
			if at := off - time.Hour; at >= -10*time.Minute && at < -10*time.Minute+30*time.Second {
				return 12
			}
			return climb(-3 * time.Minute)(off)
		}, -3*time.Minute + 15*time.Second},
		{"all at once: no climb before the onset", climb(0), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from := t0.Add(-time.Hour)
			p := &Pool{
				Queue:  grid(from, 2*time.Hour, during(60*time.Minute, 100*time.Minute, 30, 0)),
				Active: grid(from, 2*time.Hour, tt.active),
				CPU:    grid(from, 2*time.Hour, constant(3)),
				Total:  grid(from, 2*time.Hour, constant(16)),
			}
			ev, fs := pinnedStall(t, p, from, t0)
			if inc := ev.incidents().WorstIncident(); !inc.Onset.Equal(t0) {
				t.Fatalf("incident onset %s, want %s (the first failure and every worker busy)", inc.Onset, t0)
			}
			f := fs[0]
			if got := f.Start.Sub(t0); got != tt.want {
				t.Errorf("starts at t0%+v, want t0%+v", got, tt.want)
			}
			climb := FactsOf[IdlePinningFacts](&f).ClimbS
			if !climb.OK || climb.V != -tt.want.Seconds() {
				t.Errorf("climb_s = %+v, want %v", climb, -tt.want.Seconds())
			}
			ms := pinningMoments(&f, nil)
			if ms[0].Time != t0 {
				t.Errorf("'every worker busy' placed at %s, want %s", ms[0].Time, t0)
			}
			if wantClimb := tt.want < 0; (len(ms) == 2) != wantClimb {
				t.Errorf("%d moments, want the climb's own only when there was one", len(ms))
			}
		})
	}
}

// TestPinningStartWithoutBaseline: with no data before the stall, the usual
// busy level is unknown, and the finding starts at the onset rather than at
// a guess.
func TestPinningStartWithoutBaseline(t *testing.T) {
	if got := takenFrom(grid(t0, time.Hour, constant(16)), math.NaN(), t0.Add(30*time.Minute), 30*time.Second); !got.Equal(t0.Add(30 * time.Minute)) {
		t.Errorf("start %s without a usual level, want the onset", got)
	}
	// A hole in the series breaks the climb: nothing says when it began.
	ps := grid(t0, time.Hour, func(off time.Duration) float64 {
		if off < 20*time.Minute {
			return 1
		}
		return 16
	})
	var holed = ps[:0:0]
	for _, p := range ps {
		if off := p.T.Sub(t0); off < 25*time.Minute || off >= 28*time.Minute {
			holed = append(holed, p)
		}
	}
	if got := takenFrom(holed, 1, t0.Add(30*time.Minute), 30*time.Second); !got.Equal(t0.Add(28 * time.Minute)) {
		t.Errorf("start %s across a 3-minute hole, want %s (where the samples resume)", got, t0.Add(28*time.Minute))
	}
	if got := takenFrom(ps, 1, t0.Add(30*time.Minute), 30*time.Second); !got.Equal(t0.Add(20 * time.Minute)) {
		t.Errorf("start %s, want %s", got, t0.Add(20*time.Minute))
	}
}
