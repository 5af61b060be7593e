package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestTableHeadersAsWritten: tablewriter's default header formatting
// upper-cases and splits on punctuation ("LOGGED - OUT", "( MEDIAN )",
// "PHP S SAVED"); the terminal tables print headers as written.
func TestTableHeadersAsWritten(t *testing.T) {
	var b bytes.Buffer
	tb := NewTable(&b)
	tb.Header("other logged-out refused", "per address (median)", "crawler PHP s saved")
	_ = tb.Append("1 of 2", "1", "3")
	_ = tb.Render()
	for _, want := range []string{"other logged-out refused", "per address (median)", "crawler PHP s saved"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("header %q garbled:\n%s", want, b.String())
		}
	}
}
