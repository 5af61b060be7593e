package request

import (
	"strings"
	"testing"
)

// TestFoldedSetIsLoweredLookup: has(x) is set[strings.ToLower(x)] for the
// path classifier's sets and one holding a 'k', which the Kelvin sign
// (U+212A, three bytes) lowers to: a careless version that compares
// bytes without lowering misses ".PNG", one that answers false for
// anything outside ASCII misses ".m\u212a" (".mk"), and one that rejects
// by length before lowering misses ".\u212a\u212a\u212a" (ten bytes, ".kkk").
func TestFoldedSetIsLoweredLookup(t *testing.T) {
	sets := map[string]map[string]bool{
		"assetExt":    assetExt,
		"viewActions": viewActions,
		"kelvin":      {".mk": true, ".kkk": true, "": true, "off": false},
	}
	probes := []string{"", ".css", ".CSS", ".PNG", ".Woff2", ".woff2", ".woff22", ".woff", ".wof", ".cs", "css", ".css.",
		".js", ".JS", ".j", ".jpeg", ".JPEG", ".jpeg2", ".tar.gz", ".php", "view", "VIEW", "View", "render", "Render",
		"renderer", "edit", "history", "vieW ", ".m\u212a", ".M\u212A", ".\u212a\u212a\u212a", ".mk", ".MK", ".kkk",
		".m\u212ax", "off", "OFF", ".c\xffs", "\xff", ".\u0130", "v\u0130ew", ".svg\x00", "\x00.svg", ".s\x00g"}
	for name, set := range sets {
		fs := newFoldedSet(set)
		for _, x := range probes {
			if got, want := fs.has(x), set[strings.ToLower(x)]; got != want {
				t.Errorf("%s: has(%q) = %v, want %v", name, x, got, want)
			}
		}
	}
}
