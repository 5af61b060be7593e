package live

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/live/livetest"
	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// TestClientFamilyAgreesWithTheReader: Loki's family of every line (the
// per-family counts a pushdown chooses families by) is the family the
// detectors give the request the access-log reader makes of that line, line
// by line, for Accept-Language headers where the first two letters of the
// header, the obvious key, are not the reader's: a wildcard, a range the
// reader refuses ("zh.CN", "zh CN", a 36-letter junk tag, Chinese
// characters, a leading newline), a header opening with a comma or a
// one-letter range. zh-CN, zh-TW and zh are one family on both sides.
func TestClientFamilyAgreesWithTheReader(t *testing.T) {
	clearEnv(t)
	lk := lokitest.New(t)
	t0 := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	const chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"
	headers := []string{
		"zh-CN,zh;q=0.9", "zh-TW", "zh", " zh-cn ;q=0.8",
		"*", "zh.CN", "zh CN", strings.Repeat("x", 36), "中文", "\nzh-CN", ",en-US", "x,en", "fil-PH", "",
	}
	var lines strings.Builder
	for i, h := range headers {
		ts := t0.Add(time.Duration(i) * time.Second)
		line := livetest.CaddyLine(ts, "198.51.100.1", chrome, h, "/", 200, 0.1, 100)
		lk.Push(accessStream, ts, line)
		lines.WriteString(line + "\n")
	}
	// The detectors' side: the reader's request, then its family.
	want := map[string]int{}
	var langs []string
	_, err := accesslog.ReadReader(context.Background(), "lines", strings.NewReader(lines.String()), accesslog.Options{Workers: 1}, &sources.Skips{},
		func(rs []sources.Request) error {
			for _, r := range rs {
				want[bundle.ClientFamily(r.UserAgent, r.Lang)]++
				langs = append(langs, r.Lang)
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(langs) != len(headers) {
		t.Fatalf("the reader made %d requests of %d lines", len(langs), len(headers))
	}
	got := lokiFamilyCounts(t, lk.URL(), t0)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Loki's families %v, the detectors' %v (the reader's tags %q)", got, want, langs)
	}
	if want["chrome/zh"] != 4 {
		t.Errorf("zh-CN, zh-TW, zh and a spaced zh-cn make %d lines of chrome/zh, want 4: %v", want["chrome/zh"], want)
	}
	// The header itself gives the family its primary tag gives.
	for i, h := range headers {
		if a, b := bundle.ClientFamily(chrome, h), bundle.ClientFamily(chrome, langs[i]); a != b {
			t.Errorf("%q: family %q from the header, %q from the reader's tag %q", h, a, b, langs[i])
		}
	}
}
