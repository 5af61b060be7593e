package request

import (
	"strconv"
	"testing"
)

func TestClassifyPath(t *testing.T) {
	tests := []struct {
		path, query string
		want        PathClass
	}{
		{"/healthz.php", "", ClassHealth},
		{"/static/skin.css", "", ClassAsset},
		{"/favicon.ico", "", ClassAsset},
		{"/w/%EB%8C%80%EB%AC%B8", "", ClassArticle},
		{"/wiki/Main_Page", "", ClassArticle},
		{"/", "", ClassArticle},
		{"/w/index.php", "title=Foo&action=edit", ClassTool},
		{"/w/index.php", "title=Foo&action=history", ClassTool},
		{"/w/index.php", "title=Foo&diff=12&oldid=11", ClassTool},
		{"/w/index.php", "title=Foo&action=view", ClassArticle},
		{"/w/Special:RecentChangesLinked/Foo", "", ClassSpecial},
		{"/w/Special%3AWhatLinksHere/Foo", "", ClassSpecial},
		{"/w/index.php", "title=Special:WhatLinksHere/Foo", ClassSpecial},
		{"/w/index.php", "title=Special%3ANewItem", ClassSpecial},
		{"/w/%ED%8A%B9%EC%88%98:%EC%B5%9C%EA%B7%BC%EB%B0%94%EB%80%9C", "", ClassSpecial}, // 특수:최근바뀜
		{"/w/api.php", "action=query", ClassAPI},
		{"/w/load.php", "modules=site", ClassOther},
		{"/w/%zz", "", ClassArticle}, // broken escape still classifies
	}
	for _, tt := range tests {
		if got := ClassifyPath(tt.path, tt.query, "/healthz.php"); got != tt.want {
			t.Errorf("ClassifyPath(%q, %q) = %q, want %q", tt.path, tt.query, got, tt.want)
		}
	}
}

func TestToolLabel(t *testing.T) {
	tests := []struct{ path, query, want string }{
		{"/w/Special:WhatLinksHere/Foo", "", "Special:WhatLinksHere (path)"},
		{"/w/index.php", "title=Special:WhatLinksHere/Foo", "Special:WhatLinksHere (title=)"},
		{"/w/Special%3ARecentChangesLinked/%EB%8C%80", "", "Special:RecentChangesLinked (path)"},
		{"/w/index.php", "title=Foo&action=EDIT", "action=edit"},
		{"/w/index.php", "title=Foo&diff=3", "diff"},
		{"/w/Foo", "", "article"},
		{"/static/a.css", "", "asset"},
		// Lowering changes these bytes' width: the name is still cut from
		// the path where the namespace is (it once panicked instead).
		{"/PageIm/%FF%FE/Special:25/x", "", "Special:25 (path)"},
		{"/w/%C4%B0%C8%BA/SPECIAL:Log/y", "", "SPECIAL:Log (path)"},
		{"/w/index.php", "title=%C8%BA%C8%BASpecial:Export/z", "Special:Export (title=)"},
	}
	for _, tt := range tests {
		class := ClassifyPath(tt.path, tt.query, "")
		if got := ToolLabel(tt.path, tt.query, class); got != tt.want {
			t.Errorf("ToolLabel(%q, %q) = %q, want %q", tt.path, tt.query, got, tt.want)
		}
	}
}

// TestHexValue: the table answers for all 256 bytes as strconv does.
func TestHexValue(t *testing.T) {
	for c := range 256 {
		v, err := strconv.ParseUint(string(rune(c)), 16, 8)
		if isHex(byte(c)) != (err == nil) || err == nil && unhex(byte(c)) != byte(v) {
			t.Errorf("byte %#x: isHex %v, unhex %d; strconv %d, %v", c, isHex(byte(c)), unhex(byte(c)), v, err)
		}
	}
}
