package benchref

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"

	"github.com/aftermath-forensics/aftermath/cmd/ingestbench/benchlog"
)

func genBytes(t testing.TB, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := benchlog.Generate(&buf, benchlog.GenOptions{Size: size, Clients: 5000}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkReference is the yardstick of issue 9 on the generated log, one
// worker and GOMAXPROCS workers, with each extractor.
func BenchmarkReference(b *testing.B) {
	data := genBytes(b, 32<<20)
	for _, ex := range []Extractor{JSONParser, FastJSON} {
		for _, workers := range []int{1, runtime.GOMAXPROCS(0)} {
			b.Run(string(ex)+"/workers="+strconv.Itoa(workers), func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := Count(bytes.NewReader(data), workers, ex); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestReferenceCounts: both extractors and any number of workers count the
// same lines the same way.
func TestReferenceCounts(t *testing.T) {
	data := genBytes(t, 4<<20)
	want, err := Count(bytes.NewReader(data), 1, FastJSON)
	if err != nil {
		t.Fatal(err)
	}
	if want.Requests == 0 || want.Bad != 0 || want.Lines != int64(bytes.Count(data, []byte("\n"))) {
		t.Fatalf("fastjson counted %d lines, %d requests, %d bad", want.Lines, want.Requests, want.Bad)
	}
	for _, ex := range []Extractor{JSONParser, FastJSON} {
		for _, w := range []int{1, 2, 3} {
			got, err := Count(bytes.NewReader(data), w, ex)
			if err != nil {
				t.Fatal(err)
			}
			if got.Requests != want.Requests || len(got.ByIP) != len(want.ByIP) || len(got.ByMinute) != len(want.ByMinute) ||
				got.ByStatus[200] != want.ByStatus[200] {
				t.Errorf("%s, %d workers: %d requests, %d addresses; want %d, %d", ex, w, got.Requests, len(got.ByIP), want.Requests, len(want.ByIP))
			}
		}
	}
}
