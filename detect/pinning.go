package detect

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

func init() {
	Register(Spec{
		Kind: KindIdlePinning, Order: 8, New: func() Detector { return pinningDetector{} },
		Role:    RoleMechanism,
		Chain:   3,
		Scan:    ScanMeasure{Severity: "critical", Metric: "share of PHP responses ending at one timeout", Observed: fact("timeout_share")},
		Events:  map[string]int{EventPinning: 4},
		Explain: explainPinning,
		Moments: pinningMoments,
	})
}

// EventPinning is the timeline event of workers held without working.
const EventPinning = "pinning"

func explainPinning(p Phraser, f *Finding, _ Story) string {
	q, cpu, share, t := p.N(f.Facts["queue_peak"]), p.N(f.Facts["cpu_avg_pct"]), p.Pct(f.Facts["timeout_share"]), p.Secs(f.Facts["timeout_s"])
	if p.Korean() {
		return "워커가 일하지 않고 붙잡혀 있었습니다. 요청이 " + q + "건까지 줄을 서는 동안 CPU는 " + cpu + "%로 한가했고, PHP 응답의 " + p.Josa(share, "이/가") + " " + t + " 근처에서 한꺼번에 끝났습니다. 고정된 제한 시간이 붙잡힌 워커를 풀어 준 흔적입니다."
	}
	return "Workers were held without working: requests queued (up to " + q + ") while CPU idled at " + cpu + "%, and " + share + " of PHP's responses ended together near " + t + ", the mark of a fixed timeout freeing pinned workers."
}

func pinningMoments(f *Finding, _ Story) []Moment {
	return []Moment{{Time: f.Start, Event: EventPinning, Topic: "pinning", Text: func(p Phraser) string {
		cpu, share, t := p.N(f.Facts["cpu_avg_pct"]), p.Pct(f.Facts["timeout_share"]), p.Secs(f.Facts["timeout_s"])
		if p.Korean() {
			return "워커가 일하지 않고 붙잡힘. CPU " + cpu + "%, PHP 응답의 " + share + "가 " + t + " 근처에서 끝남"
		}
		return "workers held without working: CPU " + cpu + "%, " + share + " of PHP responses end near " + t
	}}}
}

// pinningDetector finds a stall where workers are held without working
// (overload-lessons.md section 4): the queue grows, CPU idles, and requests end
// together at one fixed timeout. Busy-but-progressing workers are saturation.
type pinningDetector struct{}

func (pinningDetector) Name() string { return KindIdlePinning }

const (
	// idleCPUPct: below it the host is idle, whatever the workers claim.
	idleCPUPct = 30.0
	// timeoutShare: the share of PHP responses that must end at one duration
	// (within ±10%) for the stall to look like a fixed timeout.
	timeoutShare = 0.5
)

func (pinningDetector) Detect(ctx context.Context, ev *Evidence, prior []Finding) ([]Finding, Check, error) {
	p := ev.Pool
	if p == nil || len(p.Queue) == 0 {
		return nil, Check{Outcome: OutcomeCouldNotRun, Reason: "no listen queue series"}, nil
	}
	if len(p.CPU) == 0 {
		return nil, Check{Outcome: OutcomeCouldNotRun, Reason: "no CPU series: cannot tell idle workers from busy ones"}, nil
	}
	if ev.Traffic == nil {
		return nil, Check{Outcome: OutcomeCouldNotRun, Reason: "no access log: request durations unknown"}, nil
	}
	workers := poolSize(ev)
	rs := runs(p.Queue, ev.From, ev.To, 2*p.Step, func(pt metrics.Point) bool { return pt.V >= float64(max(workers, 1)) })
	if len(rs) == 0 {
		return nil, Check{Reason: "the listen queue never held more requests than there are workers"}, nil
	}
	start, end := rs[0].Start, rs[len(rs)-1].End.Add(p.Step)
	cpu := meanBetween(p.CPU, start, end)
	if cpu >= idleCPUPct {
		return nil, Check{Reason: fmt.Sprintf("CPU averaged %.0f%% while requests queued: the workers were working", cpu)}, nil
	}
	var h Histogram
	for m := start.Truncate(time.Minute); m.Before(end.Add(time.Minute)); m = m.Add(time.Minute) {
		if mm := ev.Traffic.Minute(m); mm != nil {
			h.Merge(&mm.PHPDurations)
		}
	}
	if h.N == 0 {
		return nil, Check{Reason: "PHP completed nothing while requests queued, but nothing ended at a timeout either"}, nil
	}
	mode, share := modeShare(&h)
	normal := normalServiceTime(ev)
	if share < timeoutShare || (normal > 0 && mode < 5*normal) {
		return nil, Check{Reason: fmt.Sprintf("CPU was low (%.0f%%) while requests queued, but PHP durations were spread (at most %s ended near %s): workers were slow, not pinned",
			cpu, pct(share), fmtSec(mode))}, nil
	}
	facts := map[string]float64{"cpu_avg_pct": round(cpu, 1), "timeout_s": round(mode, 1), "timeout_share": round(share, 3), "queue_peak": peak(between(p.Queue, start, end)).V}
	summary := fmt.Sprintf("Workers were held without working from %s to %s: requests queued while CPU idled at %.0f%%, and %s of PHP's responses ended together near %s, the signature of a fixed timeout freeing pinned workers.",
		start.In(ev.Loc).Format("15:04"), end.In(ev.Loc).Format("15:04"), cpu, pct(share), fmtSec(mode))
	return []Finding{{Kind: KindIdlePinning, Role: RoleMechanism, Start: start, End: end, Confidence: round(math.Min(0.5+share/2, 0.9), 2),
		Summary: summary, Facts: facts}}, Check{}, nil
}

// modeShare finds the duration around which most responses ended (three
// adjacent 10% buckets) and the share of responses there.
func modeShare(h *Histogram) (float64, float64) {
	best, bestAt := uint32(0), 0
	for i := 1; i+1 < histBuckets; i++ {
		if s := h.Counts[i-1] + h.Counts[i] + h.Counts[i+1]; s > best {
			best, bestAt = s, i
		}
	}
	return bucketUpper(bestAt), float64(best) / float64(h.N)
}
