package configrepo

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFormatOf(t *testing.T) {
	tests := map[string]format{
		"Caddyfile":                          formatCaddyfile,
		"caddy/Caddyfile.prod":               formatCaddyfile,
		"sites/wiki.caddyfile":               formatCaddyfile,
		"snippets/rl.caddy":                  formatCaddyFragment,
		"php/8.3/fpm/pool.d/www.conf":        formatFPM,
		"www.conf":                           formatFPM,
		"php-fpm.conf":                       formatFPM,
		"nginx/nginx.conf":                   formatConf,
		"php.ini":                            formatPHPINI,
		"conf.d/opcache.ini":                 formatPHPINI,
		"Dockerfile":                         formatDockerfile,
		"docker/php.Dockerfile":              formatDockerfile,
		".env":                               formatEnv,
		".env.production":                    formatEnv,
		"deploy/php.env":                     formatEnv,
		"infra/prod.tfvars":                  formatTFVars,
		"infra/prod.auto.tfvars.json":        formatTFVarsJSON,
		"README.md":                          formatUnknown,
		"skins/site.css":                     formatUnknown,
		"assets/icon.png":                    formatUnknown,
		"infra/main.tf":                      formatUnknown,
		"docker-compose.yml":                 formatUnknown,
		"php/8.3/fpm/pool.d/www.conf.dpkg-n": formatUnknown,
	}
	for p, want := range tests {
		if got := formatOf(p); got != want {
			t.Errorf("formatOf(%q) = %s, want %s", p, got, want)
		}
	}
}

func TestParseKeys(t *testing.T) {
	tests := []struct {
		name    string
		f       format
		data    string
		want    map[string]string
		wantErr string
	}{
		{"pool file", formatFPM, "; comment\n[www]\nlisten = 127.0.0.1:9000\nlisten.backlog = 511 ; inline\npm.max_children=16\n" +
			`access.format = "%R - %u \"%m %r\" %s"` + "\nphp_admin_value[memory_limit] = 128M\n",
			map[string]string{"listen": "127.0.0.1:9000", "listen.backlog": "511", "pm.max_children": "16",
				"access.format": `%R - %u "%m %r" %s`, "php_admin_value[memory_limit]": "128M"}, ""},
		{"php-fpm.conf with global and two pools", formatFPM, "[global]\nerror_log = /var/log/fpm.log\n[www]\nlisten.backlog = 511\n[api]\nlisten.backlog = 64\n",
			map[string]string{"global.error_log": "/var/log/fpm.log", "[www]listen.backlog": "511", "[api]listen.backlog": "64"}, ""},
		{"last assignment wins", formatFPM, "[www]\npm.max_children = 8\npm.max_children = 16\n",
			map[string]string{"pm.max_children": "16"}, ""},
		{"nginx.conf is not ini", formatConf, "worker_processes 1;\nevents { worker_connections 1024; }\n", nil, "f:1: not an ini line"},
		{"php.ini drops sections", formatPHPINI, "[PHP]\nmemory_limit = 256M\n[opcache]\nopcache.enable = 1\n",
			map[string]string{"memory_limit": "256M", "opcache.enable": "1"}, ""},
		{"env file", formatEnv, "# knobs\nexport PHP_FPM_PM_MAX_CHILDREN=16\nPHP_FPM_LISTEN_BACKLOG=\"4096\"\nPHP_FPM_PM='static'\nPHP_VERSION=8.3 # runtime\nDB_PASSWORD=x\n",
			map[string]string{"pm.max_children": "16", "listen.backlog": "4096", "pm": "static", "php_version": "8.3", "env.DB_PASSWORD": "x"}, ""},
		{"env file garbage", formatEnv, "just words\n", nil, "f:1: not a KEY=VALUE line"},
		{"tfvars", formatTFVars, "# php\nphp_fpm_pm_max_children = 16\nphp_fpm_listen_backlog = 511 # default\nname = \"wiki \\\"prod\\\"\"\n/* block\ncomment */\nallowed = [\n  \"10.0.0.0/8\",\n  \"192.168.0.0/16\",\n]\n",
			map[string]string{"pm.max_children": "16", "listen.backlog": "511", "tfvars.name": `wiki "prod"`,
				"tfvars.allowed": `[ "10.0.0.0/8", "192.168.0.0/16", ]`}, ""},
		{"tfvars unterminated list", formatTFVars, "a = [\n 1,\n", nil, "unterminated"},
		{"tfvars json", formatTFVarsJSON, `{"php_fpm_pm_max_children": 12, "region": "eu-west-1", "tags": {"a": 1}}`,
			map[string]string{"pm.max_children": "12", "tfvars.region": "eu-west-1", "tfvars.tags": `{"a":1}`}, ""},
		{"dockerfile multi-stage", formatDockerfile, "ARG PHP_TAG=8.3-fpm-bookworm\nFROM composer:2 AS deps\nFROM docker.io/library/php:${PHP_TAG} AS base\nENV PHP_FPM_PM_MAX_CHILDREN=16 \\\n    APP=wiki\nFROM base\n",
			map[string]string{"base_image": "docker.io/library/php:8.3-fpm-bookworm", "php_version": "8.3", "pm.max_children": "16"}, ""},
		{"dockerfile without php", formatDockerfile, "FROM --platform=linux/amd64 caddy:2.11 AS web\n", map[string]string{"base_image": "caddy:2.11"}, ""},
		{"dockerfile without FROM", formatDockerfile, "RUN true\n", nil, "no FROM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseKeys(tt.f, "f", []byte(tt.data))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestEnvKey(t *testing.T) {
	tests := map[string]string{
		"PHP_FPM_PM_MAX_CHILDREN":           "pm.max_children",
		"PHP_FPM_LISTEN_BACKLOG":            "listen.backlog",
		"php_fpm_listen_backlog":            "listen.backlog",
		"FPM_PM_MAX_REQUESTS":               "pm.max_requests",
		"PHP_PM_MAX_CHILDREN":               "pm.max_children",
		"PHP_FPM_PM":                        "pm",
		"PHP_FPM_LISTEN":                    "listen",
		"PHP_FPM_REQUEST_TERMINATE_TIMEOUT": "request_terminate_timeout",
		"LISTEN_BACKLOG":                    "listen.backlog",
		"PHP_VERSION":                       "php_version",
		"PM":                                "env.PM",
		"DB_PASSWORD":                       "env.DB_PASSWORD",
		"PHP_MEMORY_LIMIT":                  "env.PHP_MEMORY_LIMIT",
	}
	for in, want := range tests {
		if got := envKey(in, "env."); got != want {
			t.Errorf("envKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDiffKeysRedacts(t *testing.T) {
	got := diffKeys(
		map[string]string{"env.DB_PASSWORD": "a", "global.servers.log_credentials": "on", "listen.backlog": "511", "same": "x", "gone": "1"},
		map[string]string{"env.DB_PASSWORD": "b", "listen.backlog": "4096", "same": "x", "env[API_TOKEN]": "t"},
	)
	want := [][3]string{
		{"env.DB_PASSWORD", Redacted, Redacted},
		{"env[API_TOKEN]", "", Redacted},
		{"global.servers.log_credentials", "on", ""},
		{"gone", "1", ""},
		{"listen.backlog", "511", "4096"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %v\nwant %v", got, want)
	}
}

// TestCaddyfileKeys parses a realistic Caddyfile with Caddy's own parser:
// global options, snippets with arguments, a snippet defined in an imported
// file, a glob import inside a site, an absolute (deployed) import path, env
// placeholders with and without defaults, and nested rate_limit zones.
func TestCaddyfileKeys(t *testing.T) {
	// The analyst's environment must not leak into the server's settings.
	t.Setenv("HEALTH_TIMEOUT", "99s")
	t.Setenv("STATUS_BIND", "0.0.0.0")
	got, unresolved, err := CaddyfileKeys(filepath.Join("testdata", "caddy", "Caddyfile"))
	if err != nil {
		t.Fatal(err)
	}
	if len(unresolved) != 0 {
		t.Errorf("unresolved imports: %v", unresolved)
	}
	want := map[string]string{
		"global.admin":                          "127.0.0.1:2019",
		"global.order":                          "rate_limit before basic_auth",
		"global.servers.log_credentials":        "on",
		"global.log.default.output":             "file /var/log/caddy/caddy.log",
		"encode":                                "gzip",
		"header.X-Content-Type-Options":         "nosniff",
		"header.X-Frame-Options":                "DENY",
		"@anon_cached.expression":               `{query} == ""`,
		"@anon_cached.not":                      "header Cookie *wikiUserID=*",
		"rewrite":                               "@anon_cached /cache{path}.html",
		"php_fastcgi":                           "127.0.0.1:9000 127.0.0.1:9002",
		"php_fastcgi.read_timeout":              "10s",
		"php_fastcgi.dial_timeout":              "3s",
		"php_fastcgi.health_uri":                "/healthz.php",
		"php_fastcgi.health_interval":           "1s",
		"php_fastcgi.health_timeout":            "10s",
		"php_fastcgi.health_fails":              "3",
		"php_fastcgi.lb_try_duration":           "2s",
		"php_fastcgi.lb_policy":                 "round_robin",
		"rate_limit":                            "on",
		"rate_limit.zone.link_walk":             "on",
		"rate_limit.zone.link_walk.match.path":  "/wiki/Special:WhatLinksHere/*",
		"rate_limit.zone.link_walk.match.query": "title=Special:WhatLinksHere*",
		"rate_limit.zone.link_walk.match.not":   "header Cookie *wikiUserID=*",
		"rate_limit.zone.link_walk.key":         "static",
		"rate_limit.zone.link_walk.window":      "10m",
		"rate_limit.zone.link_walk.events":      "150",
		"rate_limit.zone.link_walk.match":       "on",
		"rate_limit.zone.per_ip":                "on",
		"rate_limit.zone.per_ip.key":            "{remote_host}",
		"rate_limit.zone.per_ip.window":         "1m",
		"rate_limit.zone.per_ip.events":         "120",
		"bind":                                  "{env.STATUS_BIND}",
		"reverse_proxy":                         "127.0.0.1:9001",
		"reverse_proxy.transport":               "fastcgi",
		"reverse_proxy.transport.read_timeout":  "5s",
		"reverse_proxy.transport.dial_timeout":  "1s",
		"php_fastcgi.root":                      "/srv/wiki/docroot",
		"@anon_cached.method":                   "GET HEAD",
		"@anon_cached":                          "on",
		"header":                                "on",
		"global.servers":                        "on",
		"global.log.default":                    "on",
		"global.log.default.format":             "json",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected key %s = %q", k, got[k])
		}
	}
}

func TestCaddyfileKeysErrors(t *testing.T) {
	silenceCaddyLog(t) // the adapter warns of the unmatched import glob on it
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, _, err := CaddyfileKeys(write("Broken", "example.org {\n\tphp_fastcgi x\n\t{\n\t}\n}\n")); err == nil || !strings.Contains(err.Error(), "Broken") {
		t.Errorf("err = %v, want a parse error naming the file", err)
	}
	_, unresolved, err := CaddyfileKeys(write("Missing", "example.org {\n\timport /opt/nowhere/*.caddy\n\tencode gzip\n}\n"))
	if err != nil || len(unresolved) != 1 {
		t.Errorf("import of a deployed glob outside the tree: unresolved %v, err %v; want it listed, no error", unresolved, err)
	}
}
