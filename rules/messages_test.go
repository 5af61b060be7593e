package rules

import (
	"testing"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/prose/prosetest"
)

// Every message the rules code says is defined in both languages, and every
// message the files define is said.
func TestMessages(t *testing.T) {
	prosetest.Check(t, Messages, prose.Langs, ".", "Say")
}
