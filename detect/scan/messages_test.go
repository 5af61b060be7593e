package scan

import (
	"testing"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/prose/prosetest"
)

// Every message the scan says is defined in both languages, and every one
// defined is said.
func TestMessagesAreSaidAndDefined(t *testing.T) {
	prosetest.Check(t, Messages, prose.Langs, ".", "Say")
}
