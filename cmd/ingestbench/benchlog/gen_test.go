package benchlog

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestGenerateIsCaddy: the generated lines are Caddy's access-log lines
// (valid JSON of its shape), about 1,400 bytes on average, mostly HTTPS with a
// tls object, with redacted cookies; the same seed gives the same bytes, and a
// bigger size the same traffic over the same span.
func TestGenerateIsCaddy(t *testing.T) {
	var a, b bytes.Buffer
	st, err := Generate(&a, GenOptions{Size: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(&b, GenOptions{Size: 4 << 20}); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("two runs of one seed differ (%v)", err)
	}
	if avg := st.Bytes / st.Lines; avg < 1250 || avg > 1550 {
		t.Errorf("average line %d bytes", avg)
	}
	if share := float64(st.HTTPS) / float64(st.Lines); share < 0.85 || share > 0.99 {
		t.Errorf("HTTPS share %.2f", share)
	}
	if span := st.Last.Sub(st.First); span < 23*time.Hour || span > 25*time.Hour {
		t.Errorf("span %s, want about 24h", span)
	}
	redacted := 0
	for _, line := range strings.Split(strings.TrimSuffix(a.String(), "\n"), "\n") {
		var l struct {
			Logger  string  `json:"logger"`
			TS      float64 `json:"ts"`
			Status  int     `json:"status"`
			Request struct {
				ClientIP string              `json:"client_ip"`
				URI      string              `json:"uri"`
				Headers  map[string][]string `json:"headers"`
				TLS      *struct {
					Proto string `json:"proto"`
				} `json:"tls"`
			} `json:"request"`
			RespHeaders map[string][]string `json:"resp_headers"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if l.Logger != "http.log.access.log0" || l.TS == 0 || l.Status == 0 || l.Request.ClientIP == "" || l.Request.URI == "" {
			t.Fatalf("not a Caddy access line: %s", line)
		}
		if c := l.Request.Headers["Cookie"]; len(c) == 1 && c[0] == "REDACTED" {
			redacted++
		}
	}
	if redacted == 0 {
		t.Error("no REDACTED cookie")
	}
}

// TestRepeatKeepsTheKeys: a repeated log is the plain log of the same size,
// each line written Repeat times in a row, so that the flat-memory check
// compares two logs with exactly the same distinct keys. A repeat that drew
// its lines as for the bigger size would place them at other times (other
// minutes, more of the population): it fails on the first line that differs.
func TestRepeatKeepsTheKeys(t *testing.T) {
	var plain, repeated bytes.Buffer
	const size, repeat = 2 << 20, 3
	pst, err := Generate(&plain, GenOptions{Size: size})
	if err != nil {
		t.Fatal(err)
	}
	rst, err := Generate(&repeated, GenOptions{Size: size, Repeat: repeat})
	if err != nil {
		t.Fatal(err)
	}
	if rst.Lines != repeat*pst.Lines || rst.Bytes != repeat*pst.Bytes || rst.HTTPS != repeat*pst.HTTPS ||
		!rst.First.Equal(pst.First) || !rst.Last.Equal(pst.Last) {
		t.Fatalf("repeated stats %+v, want %d times %+v", rst, repeat, pst)
	}
	lines := strings.SplitAfter(plain.String(), "\n")
	got := strings.SplitAfter(repeated.String(), "\n")
	for i, line := range lines {
		if line == "" {
			continue
		}
		for j := range repeat {
			if g := got[i*repeat+j]; g != line {
				t.Fatalf("line %d, copy %d:\n got %.120s\nwant %.120s", i, j, g, line)
			}
		}
	}
}

func BenchmarkGenerate(b *testing.B) {
	const size = 16 << 20
	b.SetBytes(size)
	for b.Loop() {
		if _, err := Generate(discard{}, GenOptions{Size: size}); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
