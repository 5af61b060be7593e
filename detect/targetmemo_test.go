package detect

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
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
		forged.hash = uint32(h)
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
	if size := unsafe.Sizeof(memoSlot{}); size != 128 {
		t.Errorf("a slot is %d bytes", size)
	}
	// and the slots start on a cache line, so that each is two lines.
	if at := uintptr(unsafe.Pointer(&memo.slots[0])); at%64 != 0 {
		t.Errorf("the slots start at %#x, not on a cache line", at)
	}
}

// TestTargetMemoLongAndInline: a slot holds a short target in itself and a
// long one in a buffer of its own, which it keeps for the next long one
// while short ones come and go: the targets that take a slot in turn go
// from one to the other, and each must be read back as it is, with its own
// facts. A slot that read a short target from the buffer kept would read the
// last long one's bytes.
func TestTargetMemoLongAndInline(t *testing.T) {
	var memo targetMemo
	tab, scratch := newRouteTable(), []byte(nil)
	long := "/wiki/" + strings.Repeat("Long_title_", 12)
	longer := "/w/index.php"
	longerQuery := "title=" + strings.Repeat("Talk:X_", 40) + "&action=history"
	memo.slot(long, "") // makes the table and its seed
	slot := memo.hash(long, "") & (memoSlots - 1)
	// Targets of long's slot: a short one, and one longer than long's buffer.
	short := ""
	for i := 0; short == ""; i++ {
		if p := fmt.Sprintf("/s/%d", i); memo.hash(p, "")&(memoSlots-1) == slot {
			short = p
		}
	}
	for i := 0; memo.hash(longer, longerQuery)&(memoSlots-1) != slot; i++ {
		longer = fmt.Sprintf("/w/index%d.php", i)
	}
	targets := [][2]string{{long, ""}, {short, ""}, {long, ""}, {longer, longerQuery}, {long, ""}, {short, ""}, {short, ""}}
	for i, tg := range targets {
		s := memo.slot(tg[0], tg[1])
		if s.path() != tg[0] || s.query() != tg[1] {
			t.Fatalf("target %d %q: the slot holds %q, %q", i, tg, s.path(), s.query())
		}
		if n := len(tg[0]) + len(tg[1]); n > memoInline && (s.long == nil || int(s.longCap) < n) {
			t.Errorf("target %d %q (%d bytes): no buffer of its own", i, tg, n)
		}
		class := request.ClassifyPath(tg[0], tg[1], "")
		if got := s.pathClass("", &scratch); got != class {
			t.Errorf("target %d %q: class %q, want %q", i, tg, got, class)
		}
		if got, want := s.toolLabel(&scratch), request.ToolLabel(tg[0], tg[1], class); got != want {
			t.Errorf("target %d %q: label %q, want %q", i, tg, got, want)
		}
		if got, want := s.routeTemplate(tab), tab.template(tg[0], tg[1]); got != want {
			t.Errorf("target %d %q: template %q, want %q", i, tg, got, want)
		}
	}
}

// TestTargetMemoRecordFollowsTemplate: a slot holds its template's route
// record, and a template built again after the table folded (here
// "/wiki/Seoul" becoming "/wiki/{slug}") must come with the new template's
// record, not the old one's: the request would be counted under a template
// it no longer has.
func TestTargetMemoRecordFollowsTemplate(t *testing.T) {
	var memo targetMemo
	tab := newRouteTable()
	s := memo.slot("/wiki/Seoul", "")
	if tpl, rec := s.routeTemplate(tab), s.routeRecord(tab); tpl != "/wiki/Seoul" || rec != tab.records[tpl] {
		t.Fatalf("before the fold: template %q, its record %p, the table's %p", tpl, rec, tab.records[tpl])
	}
	for i := range maxLiterals + 1 {
		tab.template(fmt.Sprintf("/wiki/Page%c%c", 'A'+i/26, 'a'+i%26), "")
	}
	s = memo.slot("/wiki/Seoul", "")
	if tpl, rec := s.routeTemplate(tab), s.routeRecord(tab); tpl != "/wiki/{slug}" || rec != tab.records[tpl] {
		t.Fatalf("after the fold: template %q, its record %p, the table's %p", tpl, rec, tab.records[tpl])
	}
}

// escapedBatch keeps TestReadAheadSlots' batch off the stack.
var escapedBatch []sources.Request

// TestReadAheadSlots: the slots a batch's targets are remembered in are the
// ones their hashes name, read ahead or not, so that the next request for a
// target finds it. A request changed after the batch was read ahead (here
// given another target) must be hashed again: taken with the hash of the
// target it had, its own would be remembered where no look-up finds it.
func TestReadAheadSlots(t *testing.T) {
	at := time.Date(2026, 10, 3, 2, 0, 0, 0, time.UTC)
	tr := NewTraffic(sources.Site{HealthURI: "/healthz.php"}, at, at.Add(time.Hour))
	paths := []string{"/wiki/Page_0", "/wiki/Page_1", "/wiki/Page_2", "/wiki/Page_3"}
	// On the heap (escaped), as ingest's batches are: the read-ahead knows a
	// request by its address, which a batch on a goroutine's stack changes
	// when the stack grows.
	batch := make([]sources.Request, len(paths))
	escapedBatch = batch
	for i, p := range paths {
		batch[i] = sources.Request{Time: at, ClientIP: netip.MustParseAddr("198.51.100.7"), Path: p,
			Status: 200, Origin: sources.OriginUpstream, Duration: 0.1, UserAgent: "Mozilla/5.0 Firefox/131.0"}
	}
	tr.ReadAhead(batch)
	tr.Observe(&batch[0])
	if tr.targets.next != 1 {
		t.Fatalf("the first request did not take the hash read ahead")
	}
	batch[1].Path, batch[1].Query = "/index.php", "title=Other&action=history"
	for i := 1; i < len(batch); i++ {
		tr.Observe(&batch[i])
	}
	for i := range batch {
		h := tr.targets.hash(batch[i].Path, batch[i].Query)
		s := &tr.targets.slots[h&(memoSlots-1)]
		if s.path() != batch[i].Path || s.query() != batch[i].Query || s.class == 0 {
			t.Errorf("%s?%s is not remembered in its slot (which holds %q, %q, class %d)", batch[i].Path, batch[i].Query, s.path(), s.query(), s.class)
		}
	}
}
