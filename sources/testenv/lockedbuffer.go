package testenv

import (
	"bytes"
	"sync"
)

// LockedBuffer is a bytes.Buffer that several writers may share: a process's
// stdout and stderr copied by their own goroutines, or a command's two
// streams collected into one log.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
