package testenv

import (
	"encoding/csv"
	"errors"
	"io"
	"slices"
	"testing"
)

// EachCSVRow reads a gzip-compressed CSV file with a header line (the truth
// files beside the lab recording and the simulator's bundles: one row per
// request with its true class) and calls each with every row. col gives a
// column's index by its header name and ends t when the file has no such
// column; any read error ends t too.
func EachCSVRow(t testing.TB, path string, each func(col func(name string) int, rec []string)) {
	t.Helper()
	r := csv.NewReader(OpenGzip(t, path))
	head, err := r.Read()
	if err != nil {
		t.Fatalf("%s: header: %v", path, err)
	}
	col := func(name string) int {
		i := slices.Index(head, name)
		if i < 0 {
			t.Fatalf("%s: no %s column in %v", path, name, head)
		}
		return i
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		each(col, rec)
	}
}
