package rules

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// labCaddyfile is the Caddyfile of the lab recording's configuration
// repository (changes/config.tar.gz), and the Host headers its access log
// holds, counted.
func labCaddyfile(t *testing.T) (string, map[string]int) {
	t.Helper()
	dir := labDir(t)
	f, err := os.Open(filepath.Join(dir, "changes", "config.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var caddyfile string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(h.Name) == "Caddyfile" {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			caddyfile = string(b)
		}
	}
	if caddyfile == "" {
		t.Fatal("config.tar.gz holds no Caddyfile")
	}
	lf, err := os.Open(filepath.Join(dir, "access", "access.log.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	lz, err := gzip.NewReader(lf)
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string]int{}
	sc := bufio.NewScanner(lz)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Request struct {
				Host string `json:"host"`
			} `json:"request"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil {
			hosts[line.Request.Host]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return caddyfile, hosts
}

// The lab's Caddyfile has two site blocks, both bound to 127.0.0.1: the wiki
// on :8080 (the access log, php_fastcgi inside a route) and php-fpm's status
// page on :9180 (a reverse_proxy at the top, log_skip). The proxy at the top
// level made the old choice land in :9180, which protects nothing.
func TestPlaceInServingSiteLab(t *testing.T) {
	src, hosts := labCaddyfile(t)
	block, zones := testBlock(t)
	for name, h := range map[string]map[string]int{"with the logged hosts": hosts, "without them": nil} {
		pl, err := PlaceInServingSite([]byte(src), "Caddyfile", block, zones, "", h)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if pl.Site != "http://:8080" || !strings.Contains(pl.Why, "access log") {
			t.Errorf("%s: placed in %q because %q, want http://:8080 (the site that writes the access log)", name, pl.Site, pl.Why)
		}
		rl, public, status := strings.Index(pl.Caddyfile, "rate_limit {"), strings.Index(pl.Caddyfile, "http://:8080 {"), strings.Index(pl.Caddyfile, "http://:9180 {")
		if !(public < rl && rl < status) {
			t.Errorf("%s: the rate_limit block is not inside http://:8080:\n%s", name, pl.Caddyfile)
		}
		if pl.Check.Server == "" {
			t.Errorf("%s: the check names no server", name)
		}
	}
}

// A Caddyfile as sites grow: snippets, an imported file, handle and route
// blocks, a loopback sidecar and a status page.
const manySites = `{
	admin localhost:2019
}

(logging) {
	log {
		output stdout
	}
}

(php) {
	php_fastcgi unix//run/php/php8.2-fpm.sock
}

wiki.example.org {
	import logging
	encode gzip
	handle /w/* {
		import php
	}
	handle {
		root * /srv/wiki
		file_server
	}
}

static.example.org {
	import logging
	file_server
}

:2020 {
	bind 127.0.0.1 ::1
	import logging
	route {
		reverse_proxy 127.0.0.1:9000
	}
}

http://127.0.0.1:9180 {
	reverse_proxy 127.0.0.1:9001 {
		transport fastcgi {
			env SCRIPT_FILENAME {http.request.uri.path}
		}
	}
}

import sites/*.caddy
`

func TestPlaceInServingSiteChooses(t *testing.T) {
	block, zones := testBlock(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sites"), 0o755); err != nil {
		t.Fatal(err)
	}
	api := "api.example.org {\n\timport logging\n\treverse_proxy 10.0.0.5:8080\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "sites", "api.caddy"), []byte(api), 0o644); err != nil {
		t.Fatal(err)
	}
	filename := filepath.Join(dir, "Caddyfile")
	place := func(src string, hosts map[string]int) (*Placement, error) {
		return PlaceInServingSite([]byte(src), filename, block, zones, "", hosts)
	}

	// The wiki's hosts: static serves some of them too but hands nothing to
	// PHP; the sidecar on :2020 and the status page listen on loopback only.
	pl, err := place(manySites, map[string]int{"wiki.example.org": 9000, "static.example.org": 300})
	if err != nil {
		t.Fatal(err)
	}
	if pl.Site != "wiki.example.org" {
		t.Errorf("placed in %q (%s), want wiki.example.org", pl.Site, pl.Why)
	}
	// Without the hosts, the loopback-only sites still lose to the public
	// ones, but two public ones remain: refused, both named.
	if _, err := place(manySites, nil); err == nil || !strings.Contains(err.Error(), "wiki.example.org (") || !strings.Contains(err.Error(), "api.example.org (") {
		t.Errorf("without hosts: %v", err)
	}
	local := strings.TrimSuffix(manySites, "import sites/*.caddy\n")
	if pl, err := place(local, nil); err != nil || pl.Site != "wiki.example.org" || !strings.Contains(pl.Why, "loopback") {
		t.Errorf("without hosts or the import: %v, %+v", err, pl)
	}
	// The logged requests went to the API, whose block is in an imported
	// file: the block is not in this text, and the refusal says where it is.
	if _, err := place(manySites, map[string]int{"api.example.org": 500}); err == nil || !strings.Contains(err.Error(), "api.caddy:1") {
		t.Errorf("a site in an imported file: %v", err)
	}
	// Hosts no site serves (once the sidecar answers one name only):
	// refused, not guessed.
	if _, err := place(strings.Replace(manySites, ":2020 {", "sidecar.internal:2020 {", 1), map[string]int{"shop.example.net": 5}); err == nil || !strings.Contains(err.Error(), "--site") {
		t.Errorf("hosts no site serves: %v", err)
	}
	// Two public sites that both log and hand requests to PHP, and the log
	// holds hosts of both: refused, both named, --site suggested.
	two := manySites + "\nshop.example.org {\n\timport logging\n\troute {\n\t\timport php\n\t}\n}\n"
	for _, hosts := range []map[string]int{{"wiki.example.org": 9000, "shop.example.org": 700}, nil} {
		_, err := place(two, hosts)
		if err == nil || !strings.Contains(err.Error(), "wiki.example.org (") || !strings.Contains(err.Error(), "shop.example.org (") || !strings.Contains(err.Error(), "--site") {
			t.Errorf("two candidates, hosts %v: %v", hosts, err)
		}
	}
	// The log names one of the two by its Host: that one.
	if pl, err := place(two, map[string]int{"shop.example.org": 700}); err != nil || pl.Site != "shop.example.org" {
		t.Errorf("the shop's hosts: %v, %+v", err, pl)
	}
}

func TestServesHost(t *testing.T) {
	for _, tc := range []struct {
		addr, host string
		want       bool
	}{
		{"http://:8080", "wiki.lab.test", true},
		{"http://:8080", "wiki.lab.test:8080", true},
		{"http://:8080", "wiki.lab.test:9180", false},
		{"wiki.example.org", "WIKI.example.org", true},
		{"wiki.example.org", "wiki.example.org:443", true},
		{"wiki.example.org", "wiki.example.org:8443", false},
		{"*.example.org", "a.example.org", true},
		{"*.example.org", "a.b.example.org", false},
		{"wiki.example.org", "example.org", false},
	} {
		sites, err := parseSites([]byte(tc.addr+" {\n\trespond ok\n}\n"), "Caddyfile")
		if err != nil {
			t.Fatal(err)
		}
		if got := servesHost(sites[0].addrs[0], tc.host); got != tc.want {
			t.Errorf("%s serves %q: %v, want %v", tc.addr, tc.host, got, tc.want)
		}
	}
}
