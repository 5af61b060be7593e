package lokitest

// How the fake answers several queries at once.
//
// Loki evaluates queries side by side; the fake did one at a time under
// the lock that guards its counters, so a client's parallel requests
// queued behind each other. The stored streams have a lock of their own
// (store): pushes write under it, queries read under it together.
//
// A query's text is parsed once per fake (queryOf): its compiled regular
// expressions and its label_format templates, with their memo of outputs
// by labels, serve every request with the same text (a pushdown sends the
// same count for each span and shard). Keeping what | regexp and | json
// extracted from each line, by line, for later queries was tried and cost
// more than it saved (live's tests: 53 s of CPU without, 68 s with: the
// memo's hashing of kilobyte lines and its garbage).

import "sync"

// storeOf holds the fake's streams and the lock that guards them, apart
// from its counters and hooks (Loki.mu).
type storeOf struct {
	mu sync.RWMutex
	// unsorted is true when a push has added a line since the streams
	// were last sorted.
	unsorted bool
	// content fingerprints the stored lines (resultcache.go).
	content contentPrint
}

// readStreams locks the streams, sorted, for reading and returns the
// unlock: any number of queries read at once; a push waits for them.
func (f *Loki) readStreams() (unlock func()) {
	for {
		f.store.mu.RLock()
		if !f.store.unsorted {
			return f.store.mu.RUnlock
		}
		f.store.mu.RUnlock()
		f.store.mu.Lock()
		f.sortLocked()
		f.store.unsorted = false
		f.store.mu.Unlock()
	}
}

// writeStreams locks the streams for a push and returns the unlock.
func (f *Loki) writeStreams() (unlock func()) {
	f.store.mu.Lock()
	f.store.unsorted = true
	return f.store.mu.Unlock
}

// queryOf parses a query once per fake: the parsed query (its compiled
// expressions, its templates' memos) is shared by every request with the
// same text. A query that does not parse is not kept.
func (f *Loki) queryOf(q string) (*Query, error) {
	if e, ok := f.queries.Load(q); ok {
		return e.(*Query), nil
	}
	e, err := ParseQuery(q)
	if err != nil {
		return nil, err
	}
	e2, _ := f.queries.LoadOrStore(q, e)
	return e2.(*Query), nil
}
