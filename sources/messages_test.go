package sources

import (
	"testing"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/prose/prosetest"
)

// TestMessages: every note package sources says is defined in English and
// Korean, and every message of prose/en.tmpl and prose/ko.tmpl is said.
func TestMessages(t *testing.T) {
	prosetest.Check(t, Messages, prose.Langs, ".", "Say")
}
