package replayreport

import (
	"testing"

	"github.com/aftermath-forensics/aftermath/sources/failure"
)

// Failed and RateLimited together are what detect calls failed (a failed
// status, or an answer after the client left) plus the transport failures:
// the replay and the analysis of its log count one thing.
func TestFailedAndRefusedAreDetectsFailed(t *testing.T) {
	c := &Counts{
		Answered: map[int]int{200: 50, 304: 4, 404: 3, 429: 7, 500: 1, 502: 2, 503: 5, 504: 1},
		Late:     map[int]int{200: 6, 429: 2, 503: 3},
		Timeout:  2, Refused: 1, Reset: 1, EOF: 1,
	}
	want := c.Timeout + c.Refused + c.Reset + c.EOF + c.OtherError
	for s, n := range c.Answered {
		if failure.Status(s) {
			want += n
		}
	}
	for _, n := range c.Late {
		want += n // every late answer failed its client, whatever its status
	}
	if got := c.Failed() + c.RateLimited(); got != want {
		t.Errorf("Failed %d + RateLimited %d = %d, want detect's failed %d", c.Failed(), c.RateLimited(), got, want)
	}
	if c.RateLimited() != 9 {
		t.Errorf("RateLimited = %d, want the 9 answers with 429", c.RateLimited())
	}
}
