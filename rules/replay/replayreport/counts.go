package replayreport

import "github.com/aftermath-forensics/aftermath/sources/failure"

// Outcome is what became of one request, in the taxonomy of the overload
// write-ups: a refusal the server chose (429, 503) is not a timeout (the
// server said nothing), which is not a refused connection (nothing listens),
// which is not a reset or an EOF (something died mid-answer). They are never
// summed into one "errors" number.
type Outcome int

const (
	// OutcomeAnswered: a complete answer within the client's timeout; its
	// status says which (2xx goodput, 429, 502/503/504, ...).
	OutcomeAnswered Outcome = iota
	// OutcomeLate: a complete answer, but after the client's timeout: it
	// reached nobody (the incident's client had gone).
	OutcomeLate
	// OutcomeTimeout: no complete answer by the time the replay stopped
	// watching (the client's timeout plus the late window).
	OutcomeTimeout
	// OutcomeRefused: the connection was refused (nothing listening).
	OutcomeRefused
	// OutcomeReset: the connection was reset.
	OutcomeReset
	// OutcomeEOF: the connection closed before a complete answer.
	OutcomeEOF
	// OutcomeOtherError: any other transport error (kept with a sample).
	OutcomeOtherError
	// OutcomeStopped: the replay was stopped (Ctrl-C, time bound) while the
	// request was in flight: not the server's doing, counted apart.
	OutcomeStopped
	// OutcomeUnsendable: the recorded request could not be sent (a path or
	// host that does not form a request).
	OutcomeUnsendable
)

// Counts is the taxonomy of a set of requests.
type Counts struct {
	// Sent counts requests fired (answered, failed or stopped).
	Sent int `json:"sent"`
	// Answered counts complete answers within the client's timeout by status.
	Answered map[int]int `json:"answered_in_time,omitempty"`
	// Late counts complete answers after the client's timeout by status.
	Late map[int]int `json:"late,omitempty"`
	// Transport failures, each on its own.
	Timeout    int `json:"timeout"`
	Refused    int `json:"connection_refused"`
	Reset      int `json:"connection_reset"`
	EOF        int `json:"eof"`
	OtherError int `json:"other_error,omitempty"`
	// Stopped and Unsendable are not the server's doing.
	Stopped    int `json:"stopped,omitempty"`
	Unsendable int `json:"unsendable,omitempty"`
}

// Add counts one request's outcome (status: its answer's, if any).
func (c *Counts) Add(o Outcome, status int) {
	c.Sent++
	switch o {
	case OutcomeAnswered:
		if c.Answered == nil {
			c.Answered = map[int]int{}
		}
		c.Answered[status]++
	case OutcomeLate:
		if c.Late == nil {
			c.Late = map[int]int{}
		}
		c.Late[status]++
	case OutcomeTimeout:
		c.Timeout++
	case OutcomeRefused:
		c.Refused++
	case OutcomeReset:
		c.Reset++
	case OutcomeEOF:
		c.EOF++
	case OutcomeOtherError:
		c.OtherError++
	case OutcomeStopped:
		c.Stopped++
	case OutcomeUnsendable:
		c.Sent--
		c.Unsendable++
	}
}

// Merge adds o's counts to c's.
func (c *Counts) Merge(o *Counts) {
	c.Sent += o.Sent
	for s, n := range o.Answered {
		if c.Answered == nil {
			c.Answered = map[int]int{}
		}
		c.Answered[s] += n
	}
	for s, n := range o.Late {
		if c.Late == nil {
			c.Late = map[int]int{}
		}
		c.Late[s] += n
	}
	c.Timeout += o.Timeout
	c.Refused += o.Refused
	c.Reset += o.Reset
	c.EOF += o.EOF
	c.OtherError += o.OtherError
	c.Stopped += o.Stopped
	c.Unsendable += o.Unsendable
}

// Goodput counts 2xx answers in time.
func (c *Counts) Goodput() int { return c.AnsweredIn(200, 299) }

// RateLimited counts 429s, in time or late.
func (c *Counts) RateLimited() int { return c.Answered[429] + c.Late[429] }

// ProxyErrors counts 502, 503 and 504 answers, in time or late.
func (c *Counts) ProxyErrors() int {
	n := 0
	for _, s := range []int{502, 503, 504} {
		n += c.Answered[s] + c.Late[s]
	}
	return n
}

// LateTotal counts every late answer.
func (c *Counts) LateTotal() int {
	n := 0
	for _, v := range c.Late {
		n += v
	}
	return n
}

// Judged counts the requests whose fate the server decided: sent minus stopped.
func (c *Counts) Judged() int { return c.Sent - c.Stopped }

// Failed counts what failed the client other than a refusal by rule: late
// answers, 5xx, and every transport failure. Failed plus RateLimited is what
// detect calls failed (failure.Status, or a late answer: detect.Minute.Failed)
// plus the transport failures a log never shows: 429 is counted apart, as the
// refusals the rules were written to make.
func (c *Counts) Failed() int {
	n := c.LateTotal() - c.Late[429] + c.Timeout + c.Refused + c.Reset + c.EOF + c.OtherError
	for s, v := range c.Answered {
		if failure.ServerError(s) {
			n += v
		}
	}
	return n
}

// AnsweredIn counts the answers in time with a status from lo to hi.
func (c *Counts) AnsweredIn(lo, hi int) int {
	n := 0
	for s, v := range c.Answered {
		if s >= lo && s <= hi {
			n += v
		}
	}
	return n
}
