package lokitest

import (
	"bufio"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
)

// PushFile pushes every line of a log file (plain or .gz) into stream
// labels, stamped by stamp. A line stamp cannot date takes the time of the
// line before it (continuation lines); lines before the first dated one are
// dropped. Lines with the same stamp as the line before get it plus 1 ns,
// 2 ns, ... (as a shipper keeps the order of lines logged in one second),
// so that Loki does not merge identical lines. It returns the number of
// lines pushed.
func (f *Loki) PushFile(t testing.TB, labels map[string]string, path string, stamp func(line string) (time.Time, bool)) int {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var r io.Reader = fh
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(fh)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var last time.Time
	n, seq := 0, 0
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		ts, ok := stamp(line)
		if !ok {
			ts = last
		}
		if ts.IsZero() {
			continue
		}
		if ts.Equal(last) {
			seq++
		} else {
			last, seq = ts, 0
		}
		f.Push(labels, ts.Add(time.Duration(seq)), line)
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
