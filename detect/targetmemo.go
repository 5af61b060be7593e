package detect

import (
	"hash/maphash"
	"unsafe"

	"github.com/aftermath-forensics/aftermath/detect/request"
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
}

// memoSlots is the size of a targetMemo (a power of two): on the generated
// benchmark log, 41% of the requests find their target in it (47% in twice
// as many, 54% in four times: each doubling costs about a megabyte of heap,
// two of peak memory, for a few percent of CPU).
const memoSlots = 1 << 12

type memoSlot struct {
	// hash is the target's (targetMemo.hash), so that a slot held by
	// another target is told without reading its bytes.
	hash uint64
	// target is the path then the query, the slot's own copy (a request's
	// may view a larger buffer, which the memo must not keep), pathLen the
	// path's length. A newer target is copied over the last one's, so that
	// a miss allocates nothing: no fact kept in a slot or handed out views
	// the target.
	target  []byte
	pathLen uint32
	// class is the path class's code (PathClass.Code; 0 until found): a
	// byte, not a string, so that a slot is 80 bytes where it was 160 and
	// the table's random reads miss the cache less.
	class uint8
	// Which of the other facts were found (a label is never "": "" is one
	// not found yet).
	hasTemplate bool
	template    string
	// templateFolds is the route table's folds count when template was
	// built.
	templateFolds uint64
	label         string
}

// path and query are the slot's target's, views of its copy.
func (s *memoSlot) path() string  { return stringView(s.target[:s.pathLen]) }
func (s *memoSlot) query() string { return stringView(s.target[s.pathLen:]) }

// slot returns the slot of a target: the one remembered, or a new one with
// no facts yet.
func (m *targetMemo) slot(rawPath, rawQuery string) *memoSlot {
	if m.slots == nil {
		m.slots = make([]memoSlot, memoSlots)
		m.seed = maphash.MakeSeed()
	}
	h := m.hash(rawPath, rawQuery)
	s := &m.slots[h&(memoSlots-1)]
	if s.hash == h && int(s.pathLen) == len(rawPath) && len(s.target) == len(rawPath)+len(rawQuery) &&
		s.path() == rawPath && s.query() == rawQuery {
		return s
	}
	buf := s.target[:0]
	if n := len(rawPath) + len(rawQuery); cap(buf) < n || cap(buf) > maxMemoTarget && cap(buf) > 2*n {
		// A long target's buffer is not kept for the short ones after it:
		// the memo's memory stays what its targets' is.
		buf = make([]byte, 0, max(n, 64))
	}
	buf = append(append(buf, rawPath...), rawQuery...)
	*s = memoSlot{hash: h, target: buf, pathLen: uint32(len(rawPath))}
	return s
}

// hash is the hash of a target, never 0 (an unused slot's).
func (m *targetMemo) hash(rawPath, rawQuery string) uint64 {
	h := maphash.String(m.seed, rawPath)
	if rawQuery != "" { // most targets have none: one hash, not two
		h ^= maphash.String(m.seed, rawQuery) * 0x9e3779b97f4a7c15
	}
	return h | 1
}

// maxMemoTarget is the longest buffer a slot keeps for a shorter target.
const maxMemoTarget = 256

// stringView is b as a string, without a copy: it reads what b holds when
// read.
func stringView(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

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
	}
	return s.template
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
