package testenv

import (
	"compress/gzip"
	"io"
	"os"
	"testing"
)

// OpenGzip opens a gzip-compressed file (the recordings' and bundles' logs,
// metrics and truth files) for reading; the file is closed when t ends, and
// an error opening it ends t.
func OpenGzip(t testing.TB, path string) io.Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return zr
}
