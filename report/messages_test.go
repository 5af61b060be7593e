package report

import (
	"testing"

	"github.com/aftermath-forensics/aftermath/prose/prosetest"
)

// TestMessages: every message report's code says is defined in English and
// Korean, and every message of prose/en.tmpl and prose/ko.tmpl is said.
func TestMessages(t *testing.T) {
	prosetest.Check(t, messages, Langs, ".", "say")
}
