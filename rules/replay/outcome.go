package replay

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/aftermath-forensics/aftermath/rules/replay/replayreport"
)

// transportOutcome classifies a transport error. A client that had already
// given up (pastTimeout) saw a timeout, whatever came later.
func transportOutcome(err error, pastTimeout bool) replayreport.Outcome {
	var ne net.Error
	switch {
	case pastTimeout, errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return replayreport.OutcomeTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return replayreport.OutcomeRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return replayreport.OutcomeReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return replayreport.OutcomeEOF
	}
	return replayreport.OutcomeOtherError
}
