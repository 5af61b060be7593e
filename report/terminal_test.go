package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter"
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

// TestTablesPrintAsNewTables: the summary's tables, one Table reset between
// them, print as tables made new each: wider then narrower columns, more
// then fewer, a header wider than its cells and a cell wider than its
// header, Korean wide letters among them.
func TestTablesPrintAsNewTables(t *testing.T) {
	shapes := []struct {
		header []string
		rows   [][]string
	}{
		{[]string{"status", "requests"}, [][]string{{"200", "2,809"}, {"503", "10"}}},
		{[]string{"rank", "role", "finding", "confidence"}, [][]string{{"1", "cause", "crawler_burst-1, a finding with a long name", "0.90"}, {"2", "enabler", "config_change-1", "0.75"}}},
		{[]string{"time", "무엇"}, [][]string{{"02:26", "크롤러 요청이 늘어남"}}},
		{[]string{"fingerprint", "requests", "addresses"}, [][]string{{"Chrome / zh-cn / logged out", "8,001", "4,870"}}},
	}
	var reused, fresh bytes.Buffer
	ts := tables{w: &reused}
	for _, s := range shapes {
		for _, tb := range []*tablewriter.Table{ts.next(), NewTable(&fresh)} {
			tb.Header(s.header)
			for _, row := range s.rows {
				_ = tb.Append(row)
			}
			_ = tb.Render()
		}
	}
	if reused.String() != fresh.String() {
		t.Errorf("one table reset between them printed\n%s\nnew tables printed\n%s", reused.String(), fresh.String())
	}
}
