package live

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki"
	"github.com/aftermath-forensics/aftermath/sources/prometheus"
)

// TestHTTPBlockSameShapeForBothSources: one http: block, written the same
// way under loki and prometheus (Prometheus' HTTP client settings), reaches
// each server with its basic auth (the password read from a file relative
// to the configuration) and its headers, and wins over the environment's
// credentials; the flat keys of before still work beside it.
func TestHTTPBlockSameShapeForBothSources(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]http.Header{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.URL.Path, "/loki/") {
			w.Write([]byte(`{"status":"success","data":["job"]}`))
			return
		}
		w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	}))
	defer srv.Close()

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte("file-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const block = "  http:\n    basic_auth:\n      username: oncall\n      password_file: pw\n    http_headers:\n      X-Team:\n        values: [sre]\n"
	doc := "loki:\n  addr: " + srv.URL + "\n  selector: '{job=\"caddy\"}'\n" + block +
		"prometheus:\n  url: " + srv.URL + "\n" + block
	clearEnv(t)
	t.Setenv(loki.EnvBearerToken, "env-token-loses")
	t.Setenv(EnvPrometheusBearerToken, "env-token-loses")
	p := filepath.Join(dir, "aftermath.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 0 {
		t.Fatalf("warnings %v", c.Warnings)
	}
	lc, err := c.Loki.clientConfig()
	if err != nil {
		t.Fatal(err)
	}
	lcl, err := loki.New(lc)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 10, 3, 0, 0, 0, 0, time.UTC)
	if _, err := lcl.Labels(context.Background(), t0, t0.Add(time.Hour), ""); err != nil {
		t.Fatal(err)
	}
	pcl, err := prometheus.New(c.Prometheus.clientConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pcl.Query(context.Background(), "up", t0); err != nil {
		t.Fatal(err)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("oncall:file-password"))
	for _, path := range []string{"/loki/api/v1/labels", "/api/v1/query"} {
		h := seen[path]
		if h == nil {
			t.Fatalf("%s not asked; asked %v", path, seen)
		}
		if got := h.Get("Authorization"); got != want {
			t.Errorf("%s: Authorization %q, want the http block's basic auth", path, got)
		}
		if got := h.Get("X-Team"); got != "sre" {
			t.Errorf("%s: X-Team %q, want sre", path, got)
		}
	}
	// Neither configuration prints the password.
	for _, s := range []string{lc.String(), c.Prometheus.clientConfig().String()} {
		if strings.Contains(s, "file-password") || !strings.Contains(s, "basic_auth") {
			t.Errorf("configuration printed as %s", s)
		}
	}
}
