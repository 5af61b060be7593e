package detect

import (
	"testing"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/prose/prosetest"
)

// TestMessages: every message a detector says is defined in English and
// Korean, and every message of prose/en.tmpl and prose/ko.tmpl is said, here
// or by the config-change analysis, which speaks this catalog.
func TestMessages(t *testing.T) {
	prosetest.CheckDirs(t, Messages, prose.Langs, []string{".", "configchange"}, "Say")
}
