package detect

import (
	"hash/maphash"
	"unsafe"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// A targetMemo remembers what Observe derives from a request target (raw
// path and query) alone, for the targets seen lately: its path class, its
// tool label and its route template. Popular pages, assets and a crawler's
// repeated URLs come back again and again; each is classified and templated
// once, and a repeat costs a hash and a comparison.
//
// The memo is a fixed table of memoSlots indexed by a hash of the target
// (a newer target takes its slot), so that its memory is bounded whatever
// the log: a client varying its URLs costs time, not memory.
//
// Class and label depend on the target alone. The template also depends on
// what the route table folded so far (routetable.go): a remembered template
// holds while the table's folds count is the one it was built under, and in
// that case building it again would find every name it tracks already
// tracked, so skipping it changes nothing in the table either.
type targetMemo struct {
	slots []memoSlot
	seed  maphash.Seed
	// ahead holds the hashes of the batch read ahead (readAhead), in its
	// order, with the requests they are of; next is the first not asked for.
	ahead []aheadHash
	next  int
	// touched sums what readAhead read of the slots, so that the reads are
	// kept.
	touched uint32
}

// aheadHash is the hash of a request's target, computed by readAhead: the
// request, and its target as it was (a request changed since is hashed
// again), by their addresses, which keep nothing alive: the batch's
// memory goes back to ingest once observed.
type aheadHash struct {
	r, path, query    uintptr
	pathLen, queryLen int
	hash              uint64
}

// of reports whether a is of request r with r's target as it is. Ingest
// writes no request's target between ReadAhead and Observe; bytes written
// at the same address would be remembered under the hash of the old ones,
// in a slot their own hash does not name: found again by no other request,
// never taken for another target's (a slot's target is compared whole).
func (a *aheadHash) of(r *sources.Request) bool {
	return a.r == uintptr(unsafe.Pointer(r)) && a.path == stringAddr(r.Path) && a.pathLen == len(r.Path) &&
		a.query == stringAddr(r.Query) && a.queryLen == len(r.Query)
}

// stringAddr is the address of s's bytes.
func stringAddr(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) }

// memoSlots is the size of a targetMemo (a power of two): on the generated
// benchmark log, 41% of the requests find their target in it (47% in twice
// as many, 54% in four times: each doubling costs about a megabyte of heap,
// two of peak memory, for a few percent of CPU).
const memoSlots = 1 << 12

// A memoSlot is 128 bytes, two cache lines: the table is larger than the
// caches a request's parse leaves it (its look-up is one of the few reads
// of the pass that miss them), and its slots, made at once as one large
// object, start on a page, so that no slot straddles a third line. A
// target of up to memoInline bytes (57% of the benchmark log's requests)
// lives in the slot, read with the lines its look-up read; a longer one in
// a buffer of its own, as every target was.
type memoSlot struct {
	// hash is the target's (targetMemo.hash), so that a slot held by
	// another target is mostly told without reading its bytes: a filter,
	// the bytes decide.
	hash uint32
	// targetLen is the target's length (the path then the query), pathLen
	// the path's.
	targetLen, pathLen uint32
	// long holds a target longer than memoInline, longCap bytes: the slot's
	// own copy (a request's may view a larger buffer, which the memo must
	// not keep). A newer target is copied over the last one's, and a
	// shorter one held inline keeps the buffer for the next long one, so
	// that a miss allocates nothing but for a longer target than the
	// buffer holds: no fact kept in a slot or handed out views the target.
	longCap uint32
	long    *byte
	// templateFolds is the route table's folds count when template was
	// built.
	templateFolds uint64
	template      string
	// record is the route table's record of template (nil until asked
	// for, and when template is built again): found once, not per request.
	record *routeRecord
	// label is "" until found (a label is never "").
	label string
	// class is the path class's code (PathClass.Code; 0 until found): a
	// byte, not a string.
	class uint8
	// hasTemplate says template was built.
	hasTemplate bool
	// inline holds a target of up to memoInline bytes.
	inline [memoInline]byte
}

// memoInline is how long a target a slot holds in itself: what a 128-byte
// slot leaves.
const memoInline = 54

// target is the slot's target, a view of its copy.
func (s *memoSlot) target() string {
	if s.targetLen > memoInline {
		return unsafe.String(s.long, s.targetLen)
	}
	return unsafe.String(&s.inline[0], s.targetLen)
}

// path and query are the slot's target's, views of its copy.
func (s *memoSlot) path() string  { return s.target()[:s.pathLen] }
func (s *memoSlot) query() string { return s.target()[s.pathLen:] }

// readAhead reads the slots of a batch's targets before the batch is
// observed, in one loop of reads that depend on nothing before them: the
// table is out of the caches when a batch comes (ingest parsed the next
// chunks meanwhile), and a slot's line, read when its request is observed,
// kept the request waiting for it; read here, the lines of a batch come
// together. The hashes are kept for slotOf.
func (m *targetMemo) readAhead(batch []sources.Request) {
	m.init()
	m.ahead, m.next = m.ahead[:0], 0
	sum := m.touched
	for i := range batch {
		r := &batch[i]
		h := m.hash(r.Path, r.Query)
		m.ahead = append(m.ahead, aheadHash{r: uintptr(unsafe.Pointer(r)), path: stringAddr(r.Path), pathLen: len(r.Path),
			query: stringAddr(r.Query), queryLen: len(r.Query), hash: h})
		s := &m.slots[h&(memoSlots-1)]
		// Both of the slot's lines: its hash, and its inline target.
		sum += s.hash + uint32(s.inline[0])
	}
	m.touched = sum
}

// slotOf is slot of r's target, with the hash readAhead computed when r is
// the next request of the batch it read.
func (m *targetMemo) slotOf(r *sources.Request) *memoSlot {
	if m.next < len(m.ahead) {
		if a := &m.ahead[m.next]; a.of(r) {
			m.next++
			return m.slotHashed(r.Path, r.Query, a.hash)
		}
	}
	return m.slot(r.Path, r.Query)
}

func (m *targetMemo) init() {
	if m.slots == nil {
		m.slots = make([]memoSlot, memoSlots)
		m.seed = maphash.MakeSeed()
	}
}

// slot returns the slot of a target: the one remembered, or a new one with
// no facts yet.
func (m *targetMemo) slot(rawPath, rawQuery string) *memoSlot {
	m.init()
	return m.slotHashed(rawPath, rawQuery, m.hash(rawPath, rawQuery))
}

// slotHashed is slot of a target whose hash is h.
func (m *targetMemo) slotHashed(rawPath, rawQuery string, h uint64) *memoSlot {
	s := &m.slots[h&(memoSlots-1)]
	n := len(rawPath) + len(rawQuery)
	if s.hash == uint32(h) && int(s.pathLen) == len(rawPath) && int(s.targetLen) == n {
		t := s.target()
		if t[:len(rawPath)] == rawPath && t[len(rawPath):] == rawQuery {
			return s
		}
	}
	long, longCap := s.long, s.longCap
	if longCap > maxMemoTarget && int(longCap) > 2*n {
		// A long target's buffer is not kept for the shorter ones
		// after it: the memo's memory stays what its targets' is.
		long, longCap = nil, 0
	}
	if n > memoInline && int(longCap) < n {
		b := make([]byte, max(n, 2*memoInline))
		long, longCap = unsafe.SliceData(b), uint32(len(b))
	}
	*s = memoSlot{hash: uint32(h), targetLen: uint32(n), pathLen: uint32(len(rawPath)), long: long, longCap: longCap}
	dst := s.inline[:]
	if n > memoInline {
		dst = unsafe.Slice(long, longCap)
	}
	copy(dst[copy(dst, rawPath):], rawQuery)
	return s
}

// hash is the hash of a target.
func (m *targetMemo) hash(rawPath, rawQuery string) uint64 {
	h := maphash.String(m.seed, rawPath)
	if rawQuery != "" { // most targets have none: one hash, not two
		h ^= maphash.String(m.seed, rawQuery) * 0x9e3779b97f4a7c15
	}
	return h
}

// maxMemoTarget is the longest buffer a slot keeps for a shorter target.
const maxMemoTarget = 256

// pathClass returns request.ClassifyPathScratch of the target (with healthURI and scratch).
func (s *memoSlot) pathClass(healthURI string, scratch *[]byte) request.PathClass {
	if s.class == 0 {
		s.class = request.ClassifyPathScratch(s.path(), s.query(), healthURI, scratch).Code()
	}
	class, _ := request.ClassOfCode(s.class)
	return class
}

// routeTemplate returns the target's template as the route table t folds it now.
func (s *memoSlot) routeTemplate(t *routeTable) string {
	if !s.hasTemplate || s.templateFolds != t.folds {
		s.template = t.template(s.path(), s.query())
		s.templateFolds, s.hasTemplate = t.folds, true
		s.record = nil
	}
	return s.template
}

// routeRecord returns the route table's record of the target's template
// (routeTemplate first).
func (s *memoSlot) routeRecord(t *routeTable) *routeRecord {
	if s.record == nil {
		s.record = t.record(s.template)
	}
	return s.record
}

// toolLabel returns ToolLabel of the target and its class (pathClass first),
// with scratch.
func (s *memoSlot) toolLabel(scratch *[]byte) string {
	if s.label == "" {
		class, _ := request.ClassOfCode(s.class)
		s.label = request.ToolLabelScratch(s.path(), s.query(), class, scratch)
	}
	return s.label
}
