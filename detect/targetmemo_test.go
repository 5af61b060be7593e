package detect

import (
	"testing"
	"unsafe"

	"github.com/aftermath-forensics/aftermath/detect/request"
)

// TestTargetMemoCollision: a slot is found by its target's hash, but a
// target whose hash is a remembered one's is not that target. A collision is
// forced: the facts of "/w/Special:Random" are moved to the slot of
// "/index.php?title=X&action=edit", under its hash, and that target must
// still get its own class, label and template, not the remembered ones; as
// must a target of the same length and hash but another split between path
// and query.
func TestTargetMemoCollision(t *testing.T) {
	var memo targetMemo
	tab, scratch := newRouteTable(), []byte(nil)
	a := memo.slot("/w/Special:Random", "")
	if a.pathClass("", &scratch) != request.ClassSpecial {
		t.Fatalf("class of the special page: %q", a.pathClass("", &scratch))
	}
	a.toolLabel(&scratch)
	a.routeTemplate(tab)
	for _, b := range [][2]string{{"/index.php", "title=X&action=edit"}, {"/w/Special:Rando", "m"}, {"/w/Special:Random/", ""}} {
		h := memo.hash(b[0], b[1])
		forged := *a
		forged.hash = h
		forged.target = append([]byte(nil), a.target...)
		memo.slots[h&(memoSlots-1)] = forged
		s := memo.slot(b[0], b[1])
		class := request.ClassifyPath(b[0], b[1], "")
		if got := s.pathClass("", &scratch); got != class {
			t.Errorf("%q after a collision: class %q, want %q", b, got, class)
		}
		if got, want := s.toolLabel(&scratch), request.ToolLabel(b[0], b[1], class); got != want {
			t.Errorf("%q after a collision: label %q, want %q", b, got, want)
		}
		if got, want := s.routeTemplate(tab), tab.template(b[0], b[1]); got != want {
			t.Errorf("%q after a collision: template %q, want %q", b, got, want)
		}
		if s.path() != b[0] || s.query() != b[1] {
			t.Errorf("%q after a collision: the slot holds %q, %q", b, s.path(), s.query())
		}
	}
	// The slot's size is what its comment says, and what the table's
	// memory (memoSlots of them) is counted in.
	if size := unsafe.Sizeof(memoSlot{}); size != 80 {
		t.Errorf("a slot is %d bytes", size)
	}
}
