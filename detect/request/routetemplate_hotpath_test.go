package request

import (
	"cmp"
	"net/url"
	"path"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchreqs"
)

// The route table (detect/routetable.go) builds a template for every request,
// so the template code was made to allocate nothing for a template it holds
// already, without changing one: these tests hold it to the code it
// replaced, kept here as the reference (the table's own is detect's
// routetemplate_hotpath_test.go).

func routeTemplateOriginal(rawPath, rawQuery string) string {
	return joinTemplateOriginal(templateSegmentsOriginal(rawPath), templateQueryOriginal(rawQuery), rawQuery != "", false)
}

func templateSegmentsOriginal(rawPath string) []string {
	if rawPath == "" || rawPath == "/" {
		return []string{""}
	}
	parts := strings.Split(strings.TrimPrefix(rawPath, "/"), "/")
	out := make([]string, 0, min(len(parts), maxTemplateSegments+1))
	for i, p := range parts {
		if i == maxTemplateSegments {
			out = append(out, "{rest}")
			break
		}
		// Each segment is unescaped alone, so an encoded slash stays inside it.
		if s, err := url.PathUnescape(p); err == nil {
			p = s
		}
		out = append(out, normaliseSegmentOriginal(p))
	}
	return out
}

func templateQueryOriginal(rawQuery string) []QueryItem {
	if rawQuery == "" {
		return nil
	}
	var items []QueryItem
	for part := range strings.SplitSeq(rawQuery, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		if s, err := url.QueryUnescape(k); err == nil {
			k = s
		}
		switch {
		case k == "":
			continue
		case len(k) > maxKeyLen || !utf8.ValidString(k) || strings.ContainsAny(k, "{}&=?"):
			k = phToken
		case allDigits(k):
			k = phNumber
		}
		dup := false
		for _, it := range items {
			dup = dup || it.Key == k
		}
		if dup {
			continue
		}
		if s, err := url.QueryUnescape(v); err == nil {
			v = s
		}
		if v != "" && (len(v) > maxKeyLen || strings.ContainsAny(v, "{}&=?/") || IsPlaceholder(normaliseSegmentOriginal(v))) {
			v = ""
		}
		items = append(items, QueryItem{k, v})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Key < items[j].Key })
	if len(items) > maxTemplateKeys {
		items = append(items[:maxTemplateKeys], QueryItem{Key: "{more}"})
	}
	return items
}

func joinTemplateOriginal(segments []string, items []QueryItem, hadQuery, values bool) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(s)
	}
	if hadQuery {
		b.WriteByte('?') // a query without keys ("/?" or "/?=x") still bypasses most page caches
	}
	for i, it := range items {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(it.Key)
		if values && it.Value != "" {
			b.WriteByte('=')
			b.WriteString(it.Value)
		}
	}
	return b.String()
}

func normaliseSegmentOriginal(s string) string {
	if s == "" {
		return s
	}
	if ns, name, ok := strings.Cut(s, ":"); ok && ns != "" && name != "" && !strings.ContainsAny(ns, "/") && utf8.RuneCountInString(ns) <= 20 {
		n := normaliseSegmentOriginal(name)
		if IsPlaceholder(n) {
			return ns + ":" + n
		}
		return s
	}
	base, ext := s, path.Ext(s)
	if ext != "" && len(ext) <= 6 && ext != s && isAlnum(ext[1:]) {
		base = s[:len(s)-len(ext)]
	} else {
		ext = ""
	}
	ph := ""
	switch {
	case allDigits(base):
		ph = phNumber
	case isUUID(base):
		ph = phUUID
	case len(base) >= 8 && hexString(base) && strings.ContainsAny(base, "0123456789"):
		ph = phHash
	case utf8.RuneCountInString(base) >= longToken || !utf8.ValidString(base):
		ph = phToken
	case hasLetterAndDigit(base) && len(base) >= 6:
		ph = phToken
	case isSlug(base):
		ph = PlaceholderSlug
	}
	if ph == "" {
		return s
	}
	return ph + ext
}

// isSlug, hexString and hasLetterAndDigit are the original's tests of a
// segment's base, one pass each (basePlaceholder reads them in one).
func isSlug(s string) bool {
	seps := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return true
		}
		if c == '-' || c == '_' || c == ' ' || c == '+' || c == ',' {
			seps++
		}
	}
	return seps >= 2 || seps == 1 && len(s) >= 16
}

func hexString(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}

func hasLetterAndDigit(s string) bool {
	letter, digit := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			digit = true
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
			letter = true
		}
	}
	return letter && digit
}

// TestNormaliseSegmentMatchesOriginal holds every segment of the stream, raw
// and unescaped, to the original.
func TestNormaliseSegmentMatchesOriginal(t *testing.T) {
	for _, tg := range append(benchreqs.RouteSeeds(t), benchreqs.RouteTargets(20000, 2)...) {
		for _, s := range strings.Split(tg[0]+"/"+strings.ReplaceAll(tg[1], "&", "/"), "/") {
			u, err := url.PathUnescape(s)
			if err != nil {
				u = s
			}
			for _, s := range []string{s, u} {
				if got, want := normaliseSegment(s), normaliseSegmentOriginal(s); got != want {
					t.Fatalf("normaliseSegment(%q) = %q, the original %q", s, got, want)
				}
			}
		}
	}
}

// TestRouteTemplateMatchesOriginal holds the template of every target of
// the stream to the original's: by shape alone (RouteTemplate), and with
// the query values the route table keeps.
func TestRouteTemplateMatchesOriginal(t *testing.T) {
	deep := [][2]string{{"", ""}, {"/", ""}, {"a/b", ""}, {"//", ""}, {"/a%2Fb/c/", ""}, {strings.Repeat("/x", 12), ""}, {strings.Repeat("/x", 13), ""}, {strings.Repeat("/x", 30) + "/", ""}}
	for _, tg := range append(append(benchreqs.RouteSeeds(t), deep...), benchreqs.RouteTargets(60000, 1)...) {
		checkTemplate(t, tg[0], tg[1])
	}
}

// FuzzRouteTemplate holds one target's templates to the original's.
func FuzzRouteTemplate(f *testing.F) {
	f.Add("/wiki/Talk:Seoul", "action=history&%zz=1&k=v")
	f.Add("/2026/10/hello_world_again/", "replytocom=4121")
	f.Add("/w/%ED%8A%B9%EC%88%98:%EC%B5%9C%EA%B7%BC", "")
	f.Fuzz(func(t *testing.T, p, q string) { checkTemplate(t, p, q) })
}

// checkTemplate compares the template of one target with the original's,
// without and with query values.
func checkTemplate(t *testing.T, p, q string) {
	t.Helper()
	if got, want := RouteTemplate(p, q), routeTemplateOriginal(p, q); got != want {
		t.Fatalf("RouteTemplate(%q, %q) = %q, the original %q", p, q, got, want)
	}
	var sc TemplateScratch
	segs := sc.Segments(p)
	if n := SegmentCount(p); n != len(segs) {
		t.Fatalf("SegmentCount(%q) = %d, Segments has %d", p, n, len(segs))
	}
	got := string(AppendTemplate(nil, segs, sc.Query(q), q != "", true))
	if want := joinTemplateOriginal(templateSegmentsOriginal(p), templateQueryOriginal(q), q != "", true); got != want {
		t.Fatalf("the template of (%q, %q) with values = %q, the original %q", p, q, got, want)
	}
}

// TestSplitExtMatchesPathExt holds splitExt, which reads a segment's last
// six bytes only, backwards, to path.Ext and the original's test of it: a
// '.' first (".jpg" is a name, not an extension), last, seven bytes from the
// end (six letters are too many), or before a byte no letter nor digit
// ("a.b-c": a scan that went on past the '-' would cut ".b-c"), and two of
// them (the last counts).
func TestSplitExtMatchesPathExt(t *testing.T) {
	for _, s := range []string{"", ".", ".htaccess", "a.", "a.b", "x.abcde", "x.abcdef", "a.b-c", "a-b.c", "a.b.c", "1.2.3", ".a", ".jpg",
		"img.JPG", "a/b.c", "a.b/c", "a.%2Fb", "서울.jpg", "a..b", "ab.c9", "a.é"} {
		wantBase, wantExt := s, path.Ext(s)
		if wantExt != "" && len(wantExt) <= 6 && wantExt != s && isAlnum(wantExt[1:]) {
			wantBase = s[:len(s)-len(wantExt)]
		} else {
			wantExt = ""
		}
		if base, ext := splitExt(s); base != wantBase || ext != wantExt {
			t.Errorf("splitExt(%q) = %q, %q, want %q, %q", s, base, ext, wantBase, wantExt)
		}
	}
}

// TestQueryKindsMatchOriginal holds the one pass over a query key
// (keyKindsOf) and over a value's base (segmentKindsOf) to the original's
// separate tests, on what each pass can get wrong: an escape that decodes
// to the template's syntax ("%7B", "%3D") or a digit ("1%32": the kinds of
// the raw key would not be all digits), a key outside ASCII valid or not,
// and values holding a path ("a%2Fb"), the syntax, a namespace, an
// extension or a placeholder's shape.
func TestQueryKindsMatchOriginal(t *testing.T) {
	for _, q := range []string{
		"%7Bx%7D=1", "a%3Db=1", "1%32=x", "12=x", "%31=x", "한국=1", "%ED%95%9C=1", "%FF=1", "\xff=1", "a+b=1", "k%zz=1",
		"x=a%2Fb", "x=a/b", "x=%7B", "x={n}", "x=a?b", "x=Talk:Seoul", "x=Talk:%EC%84%9C", "x=12345", "x=img.jpg",
		"x=deadbeef1.css", "x=hello_world_again", "x=%ED%95%9C%EA%B5%AD", "x=\xff\xfe", "x=" + strings.Repeat("a", 41),
		"x=" + strings.Repeat("%41", 40), "x=" + strings.Repeat("%41", 41), "x=+", "x=%", "action=history&title=X",
	} {
		checkTemplate(t, "/index.php", q)
	}
}

// isAlnum reports whether s is one or more ASCII letters and digits.
func isAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return s != ""
}

// allDigits reports whether s is one or more decimal digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// normaliseSegment is appendNormalised as a string, for comparing with the
// original's.
func normaliseSegment(s string) string { return string(appendNormalised(nil, s)) }

// TestBasePlaceholderBoundaries holds basePlaceholder's one pass to the
// original's tests at the edge of each: an invalid byte in a short base is a
// token, not the slug its byte outside ASCII would make it (a pass that took
// every such byte for a title's would say {slug}); hex letters without a
// digit are no hash; a token needs six bytes, an ASCII one 24; one separator
// makes a slug only in 16 bytes; an extension is cut at the last '.'.
func TestBasePlaceholderBoundaries(t *testing.T) {
	korean := strings.Repeat("가", longToken-1)
	for _, c := range []struct{ segment, want string }{
		{"\xff\xfe", phToken},
		{"ab\xc3", phToken},
		{"deadbeef", ""},
		{"deadbeef1", phHash},
		{"abcdefg1", phToken},
		{"DEADBEEF12", phHash},
		{"deadbee1", phHash},
		{"dead1", ""},
		{"abc123", phToken},
		{"abc12", ""},
		{"12345", phNumber},
		{"1.5", phNumber + ".5"},
		{"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", phUUID},
		{strings.Repeat("x", longToken-1), ""},
		{strings.Repeat("x", longToken), phToken},
		{korean, PlaceholderSlug},
		{korean + "가", phToken},
		{"hello-world", ""},
		{"hello-world-again", PlaceholderSlug},
		{"averylongname-xx", PlaceholderSlug},
		{"+,", PlaceholderSlug},
		{"wp-json", ""},
		{"Talk:" + korean, "Talk:" + PlaceholderSlug},
		{"서울.jpg", PlaceholderSlug + ".jpg"},
		// The base's kinds are the bytes' before the last '.' alone: the
		// extension's letters are no hex digits, and a base cut at the first
		// '.' would be all digits.
		{"deadbeef1.css", phHash + ".css"},
		{"1.2.3", ""},
		{"v1.2.min.js", phToken + ".js"},
		{"12.jpg/34", phToken},
	} {
		got, orig := normaliseSegment(c.segment), normaliseSegmentOriginal(c.segment)
		if want := cmp.Or(c.want, c.segment); got != want || orig != want {
			t.Errorf("normaliseSegment(%q) = %q, the original %q, want %q", c.segment, got, orig, want)
		}
	}
}
