package sources

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
)

// Open opens an evidence file for reading, decompressing it when it starts with
// gzip's magic bytes (bundles hold both, whatever the file is named).
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(f)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return gzipFile{Reader: zr, f: f}, nil
	}
	return plainFile{Reader: br, f: f}, nil
}

type gzipFile struct {
	*gzip.Reader
	f *os.File
}

func (g gzipFile) Close() error {
	g.Reader.Close()
	return g.f.Close()
}

type plainFile struct {
	*bufio.Reader
	f *os.File
}

func (p plainFile) Close() error { return p.f.Close() }
