package configrepo

import (
	"testing"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
)

// silenceCaddyLog points Caddy's default logger (zap, on stderr until a
// config says otherwise) at nothing, so that what Caddy logs while a test
// passes is not printed: a passing test prints nothing. Caddy offers no
// setter; swapping in its buffering logger and unbuffering into a no-op one
// is the public way round.
func silenceCaddyLog(t testing.TB) {
	t.Helper()
	caddy.BufferedLog()
	caddy.UnbufferDefaultLogger(zap.NewNop())
}
