package scan

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

func TestProfileCache(t *testing.T) {
	cfg := Config{}.Defaults()
	now := time.Date(2026, 10, 22, 3, 0, 0, 0, time.UTC)
	c := NewCollector(cfg, sources.Site{HealthURI: "/healthz.php", ClientTimeoutS: 10}, []time.Time{now})
	ff := "Mozilla/5.0 (X11; Linux x86_64; rv:131.0) Gecko/20100101 Firefox/131.0"
	ch := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36"
	for k := range 30 {
		at := now.Add(-time.Duration(k+1) * time.Minute)
		c.Observe(req(at, "192.0.2.1", ff, "/w/Seoul", 200, sources.OriginUpstream))
		c.Observe(req(at, "203.0.113.9", ch, "/w/index.php", 503, sources.OriginProxy))
	}
	c.fetched = []Range{{now.Add(-4 * time.Hour), now}}
	c.finish()
	window := c.profile(cfg.Window(now))
	if !window.Covered || len(window.Clusters) != 2 || window.Latency.N == 0 {
		t.Fatalf("window profile %+v", window)
	}

	cache := ProfileCache{Dir: filepath.Join(t.TempDir(), "profiles")}
	if _, ok, err := cache.Load(window.Range); ok || err != nil {
		t.Fatalf("empty cache: ok %v err %v", ok, err)
	}
	if err := cache.Save(window); err != nil {
		t.Fatal(err)
	}
	got, ok, err := cache.Load(window.Range)
	if err != nil || !ok {
		t.Fatalf("load: ok %v err %v", ok, err)
	}
	if !reflect.DeepEqual(got, window) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, window)
	}

	slot := c.profile(cfg.Slots(now)[0])
	if err := cache.Save(slot); err == nil || !strings.Contains(err.Error(), "not covered") {
		t.Errorf("an uncovered slot was stored (err %v)", err)
	}

	path := cache.path(window.Range)
	for _, tt := range []struct {
		name, body, want string
		found            bool
	}{
		{"damaged", `{"version":2,"from":`, path, false},
		{"another version", `{"version":99}`, "", false},
		{"another range", `{"version":2,"from":"2026-10-01T00:00:00Z","to":"2026-10-01T01:00:00Z"}`, "holds 2026-10-01T00:00:00Z", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, ok, err := cache.Load(window.Range)
			if ok != tt.found || (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("ok %v, err %v; want ok %v and an error naming %q", ok, err, tt.found, tt.want)
			}
		})
	}

	if err := cache.Save(window); err != nil {
		t.Fatal(err)
	}
	if err := cache.Prune(window.To); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := cache.Load(window.Range); !ok {
		t.Error("Prune removed an entry ending at its bound")
	}
	if err := cache.Prune(window.To.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(cache.Dir); len(entries) != 0 {
		t.Errorf("after pruning past the window: %v", entries)
	}
}
