// Package failure holds the one definition of a failed request and of a
// count that stands out, shared by the detectors (which count the lines they
// read) and by fetch's pushdown (which has Loki count them before deciding
// what to pull): were the two to differ, a pushdown could leave out the very
// minutes the detectors would call failing.
package failure

import "math"

// Status reports whether a response status failed its client: 429 (a rate
// limit refused it) or 5xx.
func Status(code int) bool {
	return code == 429 || ServerError(code)
}

// ServerError reports whether a status is 5xx: Status without 429. A replay
// of proposed rate limits counts its failures by it, since there 429 is the
// rules' own answer, counted apart as the refusals they were written to make:
// counting it failed too would call every refusal a failure.
func ServerError(code int) bool {
	return code >= 500 && code < 600
}

// StatusPattern matches the statuses Status reports, as a regular expression
// over the status's decimal text, for queries that count failures where the
// logs are (LogQL's status=~"...").
const StatusPattern = `429|5[0-9][0-9]`

// Late reports whether an answer came after its client had given up: a
// duration (seconds) above the clients' timeout, when that is known (> 0).
func Late(durationS, clientTimeoutS float64) bool {
	return clientTimeoutS > 0 && durationS > clientTimeoutS
}

// Answered reports whether a status answered its client with a page or a
// redirect (2xx or 3xx): an answer fails its client only by coming after the
// client gave up (LateAnswer).
func Answered(code int) bool {
	return code >= 200 && code < 400
}

// LateAnswer reports whether an answer (Answered) came after its client had
// given up (Late): it reached no one, and counts failed as a failed status
// does.
func LateAnswer(code int, durationS, clientTimeoutS float64) bool {
	return Answered(code) && Late(durationS, clientTimeoutS)
}

// Failed reports whether one request failed its client: a failed status
// (Status) or a late answer (LateAnswer). Counted per minute, it is
// detect.Minute.Failed; the scan's profiles count each request by it.
func Failed(code int, durationS, clientTimeoutS float64) bool {
	return Status(code) || LateAnswer(code, durationS, clientTimeoutS)
}

// Excess reports whether observed stands out above an expected count: at
// least ratio times it, and more than z Poisson deviations above it
// (poissonMargin).
func Excess(observed, expected, ratio, z float64) bool {
	return observed >= ratio*expected && observed-expected > poissonMargin(expected, z)
}

// Level is the count that stands out above an expected count on its own
// (no ratio): expected plus z Poisson deviations (poissonMargin). Reaching it
// minute after minute is a sustained rise (detect.SustainedOnset).
func Level(expected, z float64) float64 {
	return expected + poissonMargin(expected, z)
}

// poissonMargin is z standard deviations of a Poisson count with mean
// expected, +1 under the root so that an expected 0 still needs a handful of
// events.
func poissonMargin(expected, z float64) float64 {
	return z * math.Sqrt(expected+1)
}
