package rules

import (
	"sync"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// adaptMu serialises adaptations: Caddy's default logger is process-wide, and
// each adaptation swaps it for a buffer while it runs.
var adaptMu sync.Mutex

// adaptCaddyfile runs Caddy's Caddyfile adapter on src and returns its JSON
// and its warnings: those the adapter returns and those it logs. Caddy logs
// some (a deprecated option, such as `metrics` nested in `servers`) through
// its default logger, which writes JSON lines to stderr: in aftermath's
// terminal output they would be noise the reader cannot place, so they are
// caught and said with the others.
func adaptCaddyfile(adapter caddyconfig.Adapter, src []byte, filename string) ([]byte, []string, error) {
	adaptMu.Lock()
	defer adaptMu.Unlock()
	_, orig, buffered := caddy.BufferedLog()
	js, warnings, err := adapter.Adapt(src, map[string]any{"filename": filename})
	logged := &loggedWarnings{}
	buffered.FlushTo(zap.New(logged))
	caddy.UnbufferDefaultLogger(orig) // the buffer is empty: this only restores the logger
	var ws []string
	for _, w := range warnings {
		ws = append(ws, w.String())
	}
	return js, append(ws, logged.said...), err
}

// loggedWarnings keeps the messages of entries at warning level and above.
type loggedWarnings struct{ said []string }

func (l *loggedWarnings) Enabled(lvl zapcore.Level) bool    { return lvl >= zapcore.WarnLevel }
func (l *loggedWarnings) With([]zapcore.Field) zapcore.Core { return l }
func (l *loggedWarnings) Sync() error                       { return nil }
func (l *loggedWarnings) Write(e zapcore.Entry, _ []zapcore.Field) error {
	l.said = append(l.said, e.Message)
	return nil
}
func (l *loggedWarnings) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if l.Enabled(e.Level) {
		return ce.AddCore(e, l)
	}
	return ce
}
