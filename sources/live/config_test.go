package live

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/loki"
	"github.com/aftermath-forensics/aftermath/sources/prometheus"
)

// clearEnv unsets every variable the configuration reads, for the test.
// liveEnv is every variable a Config reads from the environment.
var liveEnv = []string{loki.EnvAddr, loki.EnvUsername, loki.EnvPassword, loki.EnvBearerToken, loki.EnvBearerTokenFile,
	loki.EnvOrgID, loki.EnvCACertPath, loki.EnvClientCertPath, loki.EnvClientKeyPath, loki.EnvTLSSkipVerify,
	EnvPrometheusUsername, EnvPrometheusPassword, EnvPrometheusBearerToken}

// clearEnv unsets liveEnv for one test and restores it after; TestMain
// already unset it for the whole binary, so only a test that sets some of it
// (with t.Setenv, and so never in parallel) needs this. A test that reads no
// credentials from its own environment can run in parallel.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range liveEnv {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func writeConfig(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "aftermath.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExampleConfigLoads(t *testing.T) {
	clearEnv(t)
	c, err := Load(filepath.Join("..", "..", "aftermath.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Timezone != "Asia/Seoul" || c.Site.Workers != 16 || c.Site.ClientTimeoutS != 10 || c.Site.LoggedInCookie != "wikiUserID=" {
		t.Errorf("top level: %+v", c)
	}
	if c.BaselineDuration() != 3*time.Hour || c.PushdownAfterDuration() != 3*time.Hour || c.Pushdown.factor() != 3 || c.Pushdown.margin() != 10*time.Minute {
		t.Errorf("durations: baseline %v pushdown_after %v", c.BaselineDuration(), c.PushdownAfterDuration())
	}
	if s := c.Pushdown.baselineSample(); s != (baselineSampling{blocks: DefaultBaselineSampleBlocks, block: int(DefaultBaselineSampleBlock / time.Minute)}) ||
		c.Pushdown.BaselineSampleBlocks == nil || c.Pushdown.BaselineSampleBlock == nil {
		t.Errorf("the example's baseline sample %+v is not spelled out as the defaults", s)
	}
	if c.Loki == nil || c.Loki.Selector != `{job="caddy", host="wiki"}` || len(c.Loki.Logs) != 2 || c.Loki.SplitBy.or(0) != time.Hour {
		t.Errorf("loki: %+v", c.Loki)
	}
	if c.Prometheus == nil || len(c.Prometheus.SelectorList()) != 4 || c.CloudWatch == nil || len(c.CloudWatch.InstanceIDs) != 1 {
		t.Errorf("prometheus %+v cloudwatch %+v", c.Prometheus, c.CloudWatch)
	}
}

func TestLoadErrors(t *testing.T) {
	clearEnv(t)
	const secret = "hunter2-not-for-bundles"
	tests := []struct {
		name string
		doc  string
		want []string // substrings of the error
	}{
		{
			name: "value of the wrong kind, in the user's words",
			doc:  "loki:\n  addr: http://loki:3100\n  selector: '{job=\"caddy\"}'\n  limit: many\n",
			want: []string{`aftermath.yaml:4: loki.limit: "many" is not a whole number`},
		},
		{
			name: "a list where a section is expected",
			doc:  "prometheus:\n  - url: http://p:9090\n",
			want: []string{`aftermath.yaml:2: prometheus: `, "is not a section of keys"},
		},
		{
			name: "inline loki password",
			doc:  "loki:\n  addr: http://loki:3100\n  selector: '{job=\"caddy\"}'\n  username: u\n  password: " + secret + "\n",
			want: []string{"aftermath.yaml:5: loki.password: secrets are not read", "password_file", "LOKI_PASSWORD"},
		},
		{
			name: "inline prometheus bearer token",
			doc:  "prometheus:\n  url: http://p:9090\n  bearer_token: " + secret + "\n",
			want: []string{"aftermath.yaml:3: prometheus.bearer_token", "bearer_token_file", "PROMETHEUS_BEARER_TOKEN"},
		},
		{
			name: "inline AWS secret key",
			doc:  "cloudwatch:\n  instance_ids: [i-1]\n  secret_access_key: " + secret + "\n",
			want: []string{"aftermath.yaml:3: cloudwatch.secret_access_key", "AWS credential chain"},
		},
		{
			name: "authorization header",
			doc:  "prometheus:\n  url: http://p:9090\n  headers:\n    Authorization: Bearer " + secret + "\n",
			want: []string{"aftermath.yaml:4: prometheus.headers.Authorization", "bearer_token_file"},
		},
		{
			name: "API key header",
			doc:  "prometheus:\n  url: http://p:9090\n  headers:\n    X-Scope-OrgID: wiki\n    X-Api-Key: " + secret + "\n",
			want: []string{"aftermath.yaml:5: prometheus.headers.X-Api-Key", "credentials are not read"},
		},
		{
			name: "password in a URL",
			doc:  "loki:\n  addr: https://u:" + secret + "@loki.example.com\n  selector: '{job=\"caddy\"}'\n",
			want: []string{"aftermath.yaml:2: loki.addr: the URL carries a password"},
		},
		{
			name: "duration without unit",
			doc:  "baseline: 3\nprometheus:\n  url: http://p:9090\n",
			want: []string{"aftermath.yaml:1: ", `duration "3" has no unit`},
		},
		{
			name: "missing selector",
			doc:  "loki:\n  addr: http://loki:3100\n",
			want: []string{"aftermath.yaml:1: loki.selector: required"},
		},
		{
			name: "missing address",
			doc:  "timezone: UTC\nloki:\n  selector: '{job=\"caddy\"}'\n",
			want: []string{"aftermath.yaml:2: loki.addr: required (or set LOKI_ADDR)"},
		},
		{
			name: "pipeline that rewrites lines",
			doc:  "loki:\n  addr: http://loki:3100\n  selector: '{job=\"caddy\"}'\n  pipeline: '| line_format \"{{.msg}}\"'\n",
			want: []string{"aftermath.yaml:4: loki.pipeline", "rewrites lines"},
		},
		{
			name: "bad timezone",
			doc:  "timezone: Mars/Olympus\nprometheus:\n  url: http://p:9090\n",
			want: []string{"aftermath.yaml:1: timezone: "},
		},
		{
			name: "bad prometheus selector",
			doc:  "prometheus:\n  url: http://p:9090\n  selectors:\n    - 'rate(x[5m])'\n",
			want: []string{"aftermath.yaml:4: prometheus.selectors.0", "not a series selector"},
		},
		{
			name: "cloudwatch without metrics",
			doc:  "cloudwatch:\n  region: eu-west-1\n",
			want: []string{"aftermath.yaml:1: cloudwatch: set instance_ids or metrics"},
		},
		{
			name: "missing password file",
			doc:  "prometheus:\n  url: http://p:9090\n  username: u\n  password_file: nope.txt\n",
			want: []string{"aftermath.yaml:4: prometheus.password_file", "nope.txt"},
		},
		{
			name: "no source",
			doc:  "timezone: UTC\n",
			want: []string{"aftermath.yaml: no source configured"},
		},
		{
			name: "negative site fact",
			doc:  "site:\n  workers: -1\nprometheus:\n  url: http://p:9090\n",
			want: []string{"aftermath.yaml:2: site.workers: must not be negative"},
		},
		{
			name: "a baseline sample of no block",
			doc:  "pushdown:\n  baseline_sample_blocks: 0\nprometheus:\n  url: http://p:9090\n",
			want: []string{"aftermath.yaml:2: pushdown.baseline_sample_blocks: 0: must be at least 1"},
		},
		{
			name: "a baseline sample block shorter than a minute",
			doc:  "pushdown:\n  baseline_sample_block: 30s\nprometheus:\n  url: http://p:9090\n",
			want: []string{"aftermath.yaml:2: pushdown.baseline_sample_block: 30s: must be at least 1m, in whole minutes"},
		},
		{
			name: "a baseline sample block in part minutes",
			doc:  "pushdown:\n  baseline_sample_block: 90s\nprometheus:\n  url: http://p:9090\n",
			want: []string{"aftermath.yaml:2: pushdown.baseline_sample_block: 1m30s: must be at least 1m, in whole minutes"},
		},
		{
			name: "a baseline sample of many blocks, not a number",
			doc:  "pushdown:\n  baseline_sample_blocks: many\nprometheus:\n  url: http://p:9090\n",
			want: []string{`aftermath.yaml:2: pushdown.baseline_sample_blocks: "many" is not a whole number`},
		},
		{
			name: "Loki's address key under prometheus",
			doc:  "prometheus:\n  addr: http://p:9090\n",
			want: []string{"aftermath.yaml:2: prometheus.addr: not a key of prometheus (loki has it): did you mean url?"},
		},
		{
			name: "Prometheus' address key under loki",
			doc:  "loki:\n  url: http://loki:3100\n  selector: '{job=\"caddy\"}'\n",
			want: []string{"aftermath.yaml:2: loki.url: not a key of loki (prometheus has it): did you mean addr?"},
		},
		{
			name: "inline password in the http block",
			doc:  "loki:\n  addr: http://loki:3100\n  selector: '{job=\"caddy\"}'\n  http:\n    basic_auth:\n      username: u\n      password: " + secret + "\n",
			want: []string{"aftermath.yaml:7: loki.http.basic_auth.password: secrets are not read", "password_file"},
		},
		{
			name: "inline credentials in the http block",
			doc:  "prometheus:\n  url: http://p:9090\n  http:\n    authorization:\n      credentials: " + secret + "\n",
			want: []string{"aftermath.yaml:5: prometheus.http.authorization.credentials: secrets are not read", "credentials_file"},
		},
		{
			name: "inline private key in the http block",
			doc:  "prometheus:\n  url: http://p:9090\n  http:\n    tls_config:\n      key: " + secret + "\n",
			want: []string{"aftermath.yaml:5: prometheus.http.tls_config.key: secrets are not read", "key_file"},
		},
		{
			name: "a credential header with an inline value in the http block",
			doc:  "loki:\n  addr: http://loki:3100\n  selector: '{job=\"caddy\"}'\n  http:\n    http_headers:\n      X-Api-Key:\n        values: [" + secret + "]\n",
			want: []string{"aftermath.yaml:6: loki.http.http_headers.X-Api-Key: credentials are not read"},
		},
		{
			name: "credentials both flat and in the http block",
			doc:  "prometheus:\n  url: http://p:9090\n  username: u\n  http:\n    authorization: {type: Bearer}\n",
			want: []string{"prometheus", "set both by the flat keys", "and by the http: block"},
		},
		{
			name: "a missing file named in the http block",
			doc:  "loki:\n  addr: http://loki:3100\n  selector: '{job=\"caddy\"}'\n  http:\n    authorization: {credentials_file: nope.txt}\n",
			want: []string{"loki", "nope.txt"},
		},
		{
			name: "syntax error",
			doc:  "loki:\n  addr: [\n",
			want: []string{"aftermath.yaml:"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tt.doc))
			if err == nil {
				t.Fatal("loaded without error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q echoes the secret", err)
			}
			// The user's words, never Go's.
			for _, goWord := range []string{"live.", "sources.", "not found in type", "unmarshal", "!!"} {
				if strings.Contains(err.Error(), goWord) {
					t.Errorf("error %q speaks Go (%q)", err, goWord)
				}
			}
		})
	}
}

// TestUnknownKeysAreWarnings: a key aftermath.yaml does not know is a
// warning naming the file, the line and the key probably meant, and the rest
// of the file is read (as bundle.yaml's are); a secret under an unknown name
// is still refused.
func TestUnknownKeysAreWarnings(t *testing.T) {
	clearEnv(t)
	const prom = "prometheus:\n  url: http://p:9090\n"
	tests := []struct {
		name    string
		doc     string
		want    []string // one substring per warning, in order
		workers int
	}{
		{
			name:    "misspelt site fact",
			doc:     "timezone: UTC\nsite:\n  workers: 4\n  wrokers: 8\n" + prom,
			want:    []string{`aftermath.yaml:4: unknown key "wrokers" in site, ignored (did you mean "workers"?)`},
			workers: 4,
		},
		{
			name:    "plural of a site fact",
			doc:     "site:\n  worker: 16\n" + prom,
			want:    []string{`aftermath.yaml:2: unknown key "worker" in site, ignored (did you mean "workers"?)`},
			workers: 0, // not read: the warning says so
		},
		{
			name: "misspelt top-level key",
			doc:  prom + "pushdown_afer: 3h\n",
			want: []string{`aftermath.yaml:3: unknown key "pushdown_afer", ignored (did you mean "pushdown_after"?)`},
		},
		{
			name: "a note, far from every key",
			doc:  "note: written after the outage of 2 October\n" + prom,
			want: []string{`aftermath.yaml:1: unknown key "note", ignored`},
		},
		{
			name: "keys in a list item and in a nested section",
			doc: "loki:\n  addr: http://loki:3100\n  selector: '{job=\"caddy\"}'\n  logs:\n    - name: caddy\n      selectr: '{job=\"caddy-log\"}'\n      selector: '{job=\"caddy-log\"}'\n" +
				"  retires: 3\n",
			want: []string{`aftermath.yaml:6: unknown key "selectr" in loki.logs[1], ignored (did you mean "selector"?)`,
				`aftermath.yaml:8: unknown key "retires" in loki, ignored (did you mean "retries"?)`},
		},
		{
			name: "no unknown key",
			doc:  "site:\n  workers: 4\n" + prom,
			want: nil, workers: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(writeConfig(t, tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Warnings) != len(tt.want) {
				t.Fatalf("warnings %v, want %d", c.Warnings, len(tt.want))
			}
			for i, w := range tt.want {
				n := c.Warnings[i]
				// A near miss of a known key is a warning (the setting the
				// user meant is not in force); a key far from every known one
				// (a note) is only information.
				sev := sources.SeverityInfo
				if strings.Contains(w, "did you mean") {
					sev = sources.SeverityWarning
				}
				if n.Severity != sev || !strings.HasSuffix(n.Message, w) || !strings.Contains(n.Message, string(filepath.Separator)+"aftermath.yaml:") {
					t.Errorf("warning %d: %+v, want %q", i, n, w)
				}
			}
			if c.Site.Workers != tt.workers {
				t.Errorf("site.workers %d, want %d", c.Site.Workers, tt.workers)
			}
		})
	}
	// A secret is refused as such, never kept as an "unknown key" warning
	// that would print it.
	_, err := Load(writeConfig(t, prom+"  api_key: s3cr3t-value\n"))
	if err == nil || !strings.Contains(err.Error(), "prometheus.api_key: secrets are not read") || strings.Contains(err.Error(), "s3cr3t-value") {
		t.Errorf("inline api_key: %v", err)
	}
}

func TestCredentialsFromEnvAndFiles(t *testing.T) {
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "loki-password")
	tokFile := filepath.Join(dir, "prom-token")
	os.WriteFile(pwFile, []byte("from-file\n"), 0o600)
	os.WriteFile(tokFile, []byte("tok-from-file\n"), 0o600)
	const lokiDoc = "loki:\n  selector: '{job=\"caddy\"}'\n"
	tests := []struct {
		name  string
		env   map[string]string
		doc   string
		check func(t *testing.T, c *Config)
	}{
		{
			name: "logcli variables",
			env:  map[string]string{loki.EnvAddr: "http://loki-from-env:3100", loki.EnvUsername: "u", loki.EnvPassword: "pw-env", loki.EnvOrgID: "tenant"},
			doc:  lokiDoc,
			check: func(t *testing.T, c *Config) {
				lc, err := c.Loki.clientConfig()
				if err != nil {
					t.Fatal(err)
				}
				if lc.Addr != "http://loki-from-env:3100" || lc.Username != "u" || lc.Password != "pw-env" || lc.OrgID != "tenant" || lc.BearerToken != "" {
					t.Errorf("%s", lc) // String redacts
				}
			},
		},
		{
			name: "the file wins over the environment",
			env:  map[string]string{loki.EnvAddr: "http://loki:3100", loki.EnvUsername: "u", loki.EnvPassword: "pw-env"},
			doc:  lokiDoc + "  addr: http://loki-from-config:3100\n  password_file: " + filepath.Base(pwFile) + "\n",
			check: func(t *testing.T, c *Config) {
				lc, _ := c.Loki.clientConfig()
				if lc.Addr != "http://loki-from-config:3100" || lc.Password != "from-file" || lc.Username != "u" {
					t.Errorf("addr %q password from file %v", lc.Addr, lc.Password == "from-file")
				}
			},
		},
		{
			name: "bearer token from the environment",
			env:  map[string]string{loki.EnvAddr: "http://loki:3100", loki.EnvBearerToken: "tok-env"},
			doc:  lokiDoc,
			check: func(t *testing.T, c *Config) {
				lc, _ := c.Loki.clientConfig()
				if lc.BearerToken != "tok-env" || lc.Password != "" {
					t.Errorf("bearer %v", lc.BearerToken == "tok-env")
				}
			},
		},
		{
			name: "a configured token file ignores basic auth in the environment",
			env:  map[string]string{loki.EnvAddr: "http://loki:3100", loki.EnvUsername: "u", loki.EnvPassword: "pw-env"},
			doc:  lokiDoc + "  bearer_token_file: " + tokFile + "\n",
			check: func(t *testing.T, c *Config) {
				lc, _ := c.Loki.clientConfig()
				if lc.BearerTokenFile != tokFile || lc.Password != "" || lc.Username != "" {
					t.Errorf("token file %q, basic auth kept", lc.BearerTokenFile)
				}
			},
		},
		{
			name: "prometheus basic auth from the environment",
			env:  map[string]string{EnvPrometheusUsername: "pu", EnvPrometheusPassword: "ppw"},
			doc:  "prometheus:\n  url: http://p:9090\n",
			check: func(t *testing.T, c *Config) {
				pc := c.Prometheus.clientConfig()
				if pc.Username != "pu" || pc.Password != "ppw" || pc.BearerToken != "" {
					t.Errorf("%s", pc)
				}
				if got := c.Prometheus.SelectorList(); len(got) != len(prometheus.DefaultSelectors) {
					t.Errorf("default selectors: %v", got)
				}
			},
		},
		{
			name: "prometheus token file, relative to the configuration",
			env:  map[string]string{EnvPrometheusBearerToken: "tok-env"},
			doc:  "prometheus:\n  url: http://p:9090\n  bearer_token_file: " + filepath.Base(tokFile) + "\n",
			check: func(t *testing.T, c *Config) {
				pc := c.Prometheus.clientConfig()
				if pc.BearerTokenFile != tokFile || pc.BearerToken != "" {
					t.Errorf("%s", pc)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			p := filepath.Join(dir, "aftermath.yaml")
			if err := os.WriteFile(p, []byte(tt.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := Load(p)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}
