package live

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/cloudwatch"
	"github.com/aftermath-forensics/aftermath/sources/duration"
	"github.com/aftermath-forensics/aftermath/sources/loki"
	"github.com/aftermath-forensics/aftermath/sources/prometheus"
)

// Defaults of aftermath.yaml.
const (
	DefaultBaseline       = 3 * time.Hour
	DefaultPushdownAfter  = 3 * time.Hour
	DefaultPushdownFactor = 3.0
	DefaultPushdownMargin = 10 * time.Minute
)

// Environment variables for Prometheus credentials (Loki's are logcli's:
// loki.EnvAddr and the others).
const (
	EnvPrometheusUsername    = "PROMETHEUS_USERNAME"
	EnvPrometheusPassword    = "PROMETHEUS_PASSWORD"
	EnvPrometheusBearerToken = "PROMETHEUS_BEARER_TOKEN"
)

// Config is aftermath.yaml: where the evidence lives and what is known of the
// site. Every key is optional except what a configured source needs (a Loki
// selector, a Prometheus URL, CloudWatch instances or metrics); at least one
// source must be configured. Relative paths are relative to the file's
// directory. Secrets are never written here (see the package documentation).
type Config struct {
	// Timezone is the IANA time zone the report shows local times in, e.g.
	// "Asia/Seoul". Default: UTC.
	Timezone string `yaml:"timezone"`
	// Site holds the facts logs cannot tell (php-fpm workers, backlog, the
	// health check, the logged-in cookie, the clients' timeout), under the
	// same names as bundle.yaml's site: and copied into it. Zero means unknown.
	Site sources.Site `yaml:"site"`
	// Baseline is how much time before the window is fetched as well, raw:
	// the detectors compare the window with the hours just before it. Go
	// duration syntax ("3h", "90m"). Default 3h; "0s" fetches the window only.
	Baseline *Duration `yaml:"baseline"`
	// PushdownAfter is the longest window whose access-log lines are pulled
	// in full. Longer windows are counted per minute inside Loki and raw lines
	// are pulled only for the baseline and the minutes that stand out (see
	// Pushdown). Default 3h; "0s" always pushes down.
	PushdownAfter *Duration `yaml:"pushdown_after"`
	// Pushdown tunes how minutes are flagged when a window is pushed down.
	Pushdown Pushdown `yaml:"pushdown"`
	// Loki is where the Caddy access log (and other logs) are. Not set: no
	// access log is fetched.
	Loki *Loki `yaml:"loki"`
	// Prometheus is where php-fpm's, Caddy's and node metrics are. Not set:
	// none are fetched.
	Prometheus *Prometheus `yaml:"prometheus"`
	// CloudWatch is where EC2 CPU (or other AWS metrics) are. Not set: none
	// are fetched.
	CloudWatch *CloudWatch `yaml:"cloudwatch"`
	// Changes names configuration history to put in the bundle.
	Changes Changes `yaml:"changes"`

	// Path is the file the configuration was read from ("" if built in code).
	Path string `yaml:"-"`
	// Warnings are what reading the file left out: keys it does not know,
	// each with its file and line and the key probably meant. Fetch writes
	// them to stderr; an analysis puts them in data_quality.
	Warnings []sources.QualityNote `yaml:"-"`
}

// Pushdown tunes the flagging of minutes in a pushed-down window.
type Pushdown struct {
	// Factor: a minute is flagged when its line count (or its count of failed
	// lines) exceeds Factor times the median of the unflagged minutes in the
	// three hours before it, plus three times the square root of that median.
	// Default 3; must be at least 1.
	Factor float64 `yaml:"factor"`
	// Margin is how much time around each flagged minute is pulled as well,
	// on both sides, so onsets and recoveries are read. Default 10m.
	Margin *Duration `yaml:"margin"`
}

// Loki says where the logs are and which streams hold Caddy's access log.
// Credentials: LOKI_USERNAME and LOKI_PASSWORD (or password_file), or
// LOKI_BEARER_TOKEN (or bearer_token_file / LOKI_BEARER_TOKEN_FILE), as logcli.
type Loki struct {
	// Addr is Loki's base URL, e.g. "https://logs.example.com" (a path prefix
	// is kept). Default: $LOKI_ADDR. It must not carry a password.
	Addr string `yaml:"addr"`
	// Username for basic auth (not a secret). Default: $LOKI_USERNAME.
	Username string `yaml:"username"`
	// PasswordFile is a file holding the basic-auth password (trailing
	// whitespace ignored). Default: the password is $LOKI_PASSWORD.
	PasswordFile string `yaml:"password_file"`
	// BearerTokenFile is a file holding a bearer token. Default:
	// $LOKI_BEARER_TOKEN_FILE, else the token is $LOKI_BEARER_TOKEN. Basic
	// auth and a bearer token are mutually exclusive.
	BearerTokenFile string `yaml:"bearer_token_file"`
	// OrgID is sent as X-Scope-OrgID (the tenant). Default: $LOKI_ORG_ID.
	OrgID string `yaml:"org_id"`
	// CAFile is a PEM bundle of CAs trusted besides the system's. Default:
	// $LOKI_CA_CERT_PATH.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a client certificate for mutual TLS. Default:
	// $LOKI_CLIENT_CERT_PATH and $LOKI_CLIENT_KEY_PATH.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// InsecureSkipVerify turns off TLS certificate verification (also on when
	// $LOKI_TLS_SKIP_VERIFY is true). Default false.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`

	// Selector is the LogQL stream selector of Caddy's access log, e.g.
	// `{job="caddy", host="wiki"}`. Required.
	Selector string `yaml:"selector"`
	// Pipeline is LogQL appended to Selector to keep only access-log lines
	// when the streams hold other lines too, e.g. `|= "http.log.access"`.
	// Filters only (line_format is refused): lines are written to the bundle
	// as Loki stores them.
	Pipeline string `yaml:"pipeline"`
	// Limit is the number of lines asked for per call; at most the server's
	// max_entries_limit_per_query (lowered automatically if Loki refuses it).
	// Default 5000.
	Limit int `yaml:"limit"`
	// Parallel is the number of sub-ranges fetched at once. Default 4.
	Parallel int `yaml:"parallel"`
	// SplitBy is the length of the sub-ranges a range is cut into. Default 1h,
	// at least 1m.
	SplitBy *Duration `yaml:"split_by"`
	// Retries is how many times a request is retried after a 429, a 5xx or a
	// timeout, with exponential backoff. Default 5; -1 for none.
	Retries int `yaml:"retries"`
	// Timeout bounds one HTTP request. Default 1m.
	Timeout *Duration `yaml:"timeout"`
	// Logs are other logs to put in the bundle's logs/ (plain text), pulled for the same
	// minutes as the access log: Caddy's own log (health checker lines) and
	// php-fpm's log, which the detectors recognise by their content.
	Logs []LokiLog `yaml:"logs"`
}

// LokiLog is another log pulled from Loki into logs/<name>.log.
type LokiLog struct {
	// Name is the file name in logs/ (letters, digits, "-", "_", "."), e.g.
	// "caddy" or "php-fpm". Required.
	Name string `yaml:"name"`
	// Selector is its LogQL stream selector, e.g. `{job="caddy-log"}`. Required.
	Selector string `yaml:"selector"`
	// Pipeline is LogQL appended to Selector (line filters), e.g.
	// `!= "http.log.access"`.
	Pipeline string `yaml:"pipeline"`
}

// Prometheus says where the metrics are and which series to export.
// Credentials: PROMETHEUS_USERNAME and PROMETHEUS_PASSWORD (or
// password_file), or PROMETHEUS_BEARER_TOKEN (or bearer_token_file).
type Prometheus struct {
	// URL is the server's base URL, e.g. "http://prometheus:9090" or, for
	// Mimir, "https://mimir.example.com/prometheus". Required. It must not
	// carry a password.
	URL string `yaml:"url"`
	// Selectors are the series to export, as series selectors. Default: the
	// php-fpm, Caddy, node and EC2 CPU series the detectors read
	// (prometheus.DefaultSelectors).
	Selectors []string `yaml:"selectors"`
	// Username for basic auth (not a secret). Default: $PROMETHEUS_USERNAME.
	Username string `yaml:"username"`
	// PasswordFile is a file holding the basic-auth password, read at every
	// request. Default: the password is $PROMETHEUS_PASSWORD.
	PasswordFile string `yaml:"password_file"`
	// BearerTokenFile is a file holding a bearer token, read at every request.
	// Default: the token is $PROMETHEUS_BEARER_TOKEN.
	BearerTokenFile string `yaml:"bearer_token_file"`
	// Headers are added to every request, e.g. {X-Scope-OrgID: tenant}.
	// Not for credentials: Authorization, and any header whose name speaks
	// of a key, token, secret, password, cookie or session, is refused.
	Headers map[string]string `yaml:"headers"`
	// CAFile is a PEM bundle of CAs trusted besides the system's.
	CAFile string `yaml:"ca_file"`
	// InsecureSkipVerify turns off TLS certificate verification. Default false.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
	// Timeout bounds one query. Default 2m.
	Timeout *Duration `yaml:"timeout"`
	// Retries is how many times a query is retried after a 429, a 5xx or a broken
	// connection. Default 2; -1 for none.
	Retries int `yaml:"retries"`
}

// CloudWatch says which AWS metrics to read. Region and credentials come
// from the standard AWS chain (environment, shared config files, SSO, web
// identity, instance role); keys are never written here.
type CloudWatch struct {
	// Region overrides the chain's region, e.g. "ap-northeast-2".
	Region string `yaml:"region"`
	// Profile selects a profile of ~/.aws/config and ~/.aws/credentials.
	Profile string `yaml:"profile"`
	// Endpoint replaces CloudWatch's endpoint (a VPC endpoint).
	Endpoint string `yaml:"endpoint"`
	// InstanceIDs get EC2 CPUUtilization, Average, every 60 s each, written
	// as aws_ec2_cpuutilization_average{instance_id="..."}.
	InstanceIDs []string `yaml:"instance_ids"`
	// Metrics are further metrics: namespace (default AWS/EC2), metric
	// (default CPUUtilization), dimensions (all of them), stat (default
	// Average), period (default 60s).
	Metrics []cloudwatch.MetricSpec `yaml:"metrics"`
	// MaxAttempts is how many times a call is tried. Default: the SDK's (3).
	MaxAttempts int `yaml:"max_attempts"`
}

// Changes names configuration history for the config_change detector.
type Changes struct {
	// ConfigRepo is a git repository of the site's configuration (php-fpm
	// pools, Caddyfile, Dockerfile); bundle.yaml records its absolute path as
	// config_repo. It is read, never copied or modified.
	ConfigRepo string `yaml:"config_repo"`
	// Files are changes.yaml files (explicit change logs), copied into the
	// bundle's changes/.
	Files []string `yaml:"files"`
}

// Duration is a length of time in the duration package's grammar: "90s",
// "10m", "3h", "7d", "2w". A bare number is refused (except 0): its unit
// would be a guess.
type Duration time.Duration

// D returns d as a *Duration, for building a Config in code.
func D(d time.Duration) *Duration { x := Duration(d); return &x }

// UnmarshalYAML parses "3h", "90m", "7d", "0".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	s := strings.TrimSpace(n.Value)
	if n.Kind != yaml.ScalarNode || s == "" {
		return fmt.Errorf("line %d: want a duration such as 3h or 90m", n.Line)
	}
	v, err := duration.Parse(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as "3h0m0s".
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

func (d *Duration) or(def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return time.Duration(*d)
}

// BaselineDuration is Baseline with its default.
func (c *Config) BaselineDuration() time.Duration { return c.Baseline.or(DefaultBaseline) }

// PushdownAfterDuration is PushdownAfter with its default.
func (c *Config) PushdownAfterDuration() time.Duration {
	return c.PushdownAfter.or(DefaultPushdownAfter)
}

func (p Pushdown) factor() float64 {
	if p.Factor == 0 {
		return DefaultPushdownFactor
	}
	return p.Factor
}

func (p Pushdown) margin() time.Duration { return p.Margin.or(DefaultPushdownMargin) }

// Location is the time zone (UTC when none is set).
func (c *Config) Location() (*time.Location, error) {
	if c.Timezone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(c.Timezone)
}

// Error is a configuration error: file, line and key, as in
// "aftermath.yaml:12: loki.password: ...".
type Error struct {
	File string
	Line int    // 0 when unknown
	Key  string // dotted path, e.g. "loki.selector"; "" for the whole file
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Load reads and checks aftermath.yaml. Inline secrets, bad durations,
// selectors and paths are errors naming the file and line; unknown keys are
// warnings (Config.Warnings). Files
// named by the configuration (password and token files, CA files, change
// logs) must be readable; the servers are not contacted.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse is Load on data already read; path names it in errors and anchors
// relative paths.
func Parse(path string, data []byte) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		// DecodeYAML words syntax errors as bundle.yaml's are.
		_, err = sources.DecodeYAML(path, data, &Config{}, nil)
		return nil, err
	}
	if len(root.Content) == 0 {
		return nil, &Error{File: path, Msg: "empty configuration: configure at least one of loki, prometheus, cloudwatch"}
	}
	doc := root.Content[0]
	if err := refuseSecrets(path, doc, nil); err != nil {
		return nil, err
	}
	// Unknown keys are warnings with "did you mean", as in bundle.yaml: a
	// note or a misspelt key must not stop an on-call engineer's fetch, but
	// must be seen (a misspelt site fact is a fact missing).
	var c Config
	warnings, err := sources.DecodeYAML(path, data, &c, nil)
	if err != nil {
		return nil, err
	}
	c.Warnings = warnings
	c.Path = path
	c.resolvePaths(filepath.Dir(path))
	if err := c.validate(); err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.File = path
			if ce.Line == 0 && ce.Key != "" {
				ce.Line = lineOf(doc, strings.Split(ce.Key, ".")...)
			}
		}
		return nil, err
	}
	return &c, nil
}

// secretKeys are keys that would hold a secret inline, with what to use
// instead (by section; "" for any).
var secretKeys = map[string]string{
	"password":              "password_file",
	"passwd":                "password_file",
	"bearer_token":          "bearer_token_file",
	"token":                 "bearer_token_file",
	"access_token":          "bearer_token_file",
	"api_key":               "a *_file key or an environment variable",
	"apikey":                "a *_file key or an environment variable",
	"secret":                "a *_file key or an environment variable",
	"client_secret":         "a *_file key or an environment variable",
	"private_key":           "a *_file key",
	"access_key_id":         "the AWS credential chain (AWS_ACCESS_KEY_ID, a profile, an instance role)",
	"aws_access_key_id":     "the AWS credential chain (AWS_ACCESS_KEY_ID, a profile, an instance role)",
	"secret_access_key":     "the AWS credential chain (AWS_SECRET_ACCESS_KEY, a profile, an instance role)",
	"aws_secret_access_key": "the AWS credential chain (AWS_SECRET_ACCESS_KEY, a profile, an instance role)",
	"session_token":         "the AWS credential chain (AWS_SESSION_TOKEN, a profile, an instance role)",
	"aws_session_token":     "the AWS credential chain (AWS_SESSION_TOKEN, a profile, an instance role)",
}

// envHint names the environment variable that holds a secret of a section.
func envHint(section, key string) string {
	switch section + "." + key {
	case "loki.password", "loki.passwd":
		return " or the " + loki.EnvPassword + " environment variable"
	case "loki.bearer_token", "loki.token", "loki.access_token":
		return " or the " + loki.EnvBearerToken + " environment variable"
	case "prometheus.password", "prometheus.passwd":
		return " or the " + EnvPrometheusPassword + " environment variable"
	case "prometheus.bearer_token", "prometheus.token", "prometheus.access_token":
		return " or the " + EnvPrometheusBearerToken + " environment variable"
	}
	return ""
}

// refuseSecrets walks the document before it is decoded, so that a secret is
// refused as such (not as an unknown key) and its value is never echoed.
func refuseSecrets(file string, n *yaml.Node, path []string) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := strings.ToLower(strings.ReplaceAll(k.Value, "-", "_"))
			p := append(append([]string(nil), path...), k.Value)
			if instead, ok := secretKeys[key]; ok {
				section := ""
				if len(path) > 0 {
					section = path[0]
				}
				return &Error{File: file, Line: k.Line, Key: strings.Join(p, "."),
					Msg: "secrets are not read from the configuration file: use " + instead + envHint(section, key) + " instead"}
			}
			if len(path) == 2 && path[1] == "headers" && credentialHeader.MatchString(k.Value) {
				return &Error{File: file, Line: k.Line, Key: strings.Join(p, "."),
					Msg: "credentials are not read from the configuration file: use bearer_token_file or password_file, or " +
						EnvPrometheusBearerToken + " / " + EnvPrometheusPassword}
			}
			if v.Kind == yaml.ScalarNode && hasURLPassword(v.Value) {
				return &Error{File: file, Line: v.Line, Key: strings.Join(p, "."),
					Msg: "the URL carries a password: remove it and use password_file or the environment"}
			}
			if err := refuseSecrets(file, v, p); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := refuseSecrets(file, c, append(append([]string(nil), path...), strconv.Itoa(i))); err != nil {
				return err
			}
		}
	}
	return nil
}

// credentialHeader matches the names of headers that carry credentials.
var credentialHeader = regexp.MustCompile(`(?i)auth|token|key|secret|passw|cookie|session`)

// hasURLPassword reports whether s is a URL with a password in its user info.
func hasURLPassword(s string) bool {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return false
	}
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return true // unparsable and holding "@": treat as a credential
	}
	if u.User == nil {
		return false
	}
	_, ok := u.User.Password()
	return ok
}

// lineOf finds the line of a key path in a document (0 if absent).
func lineOf(n *yaml.Node, path ...string) int {
	line := 0
	for _, p := range path {
		found := false
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == p {
					line, n, found = n.Content[i].Line, n.Content[i+1], true
					break
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(p); err == nil && i >= 0 && i < len(n.Content) {
				line, n, found = n.Content[i].Line, n.Content[i], true
			}
		}
		if !found {
			return line
		}
	}
	return line
}

// resolvePaths makes relative file paths relative to dir.
func (c *Config) resolvePaths(dir string) {
	abs := func(p *string) {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	if l := c.Loki; l != nil {
		for _, p := range []*string{&l.PasswordFile, &l.BearerTokenFile, &l.CAFile, &l.CertFile, &l.KeyFile} {
			abs(p)
		}
	}
	if p := c.Prometheus; p != nil {
		for _, q := range []*string{&p.PasswordFile, &p.BearerTokenFile, &p.CAFile} {
			abs(q)
		}
	}
	abs(&c.Changes.ConfigRepo)
	for i := range c.Changes.Files {
		abs(&c.Changes.Files[i])
	}
}

var logNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func keyErr(key, format string, args ...any) error {
	return &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// validate checks the decoded configuration. Errors carry the key; Parse adds
// file and line.
func (c *Config) validate() error {
	if c.Loki == nil && c.Prometheus == nil && c.CloudWatch == nil {
		return &Error{Msg: "no source configured: set at least one of loki, prometheus, cloudwatch"}
	}
	if c.Timezone != "" {
		if _, err := time.LoadLocation(c.Timezone); err != nil {
			return keyErr("timezone", "%v", err)
		}
	}
	for key, d := range map[string]*Duration{"baseline": c.Baseline, "pushdown_after": c.PushdownAfter, "pushdown.margin": c.Pushdown.Margin} {
		if d != nil && *d < 0 {
			return keyErr(key, "must not be negative")
		}
	}
	if f := c.Pushdown.Factor; f != 0 && (f < 1 || f != f) {
		return keyErr("pushdown.factor", "%g: must be at least 1", f)
	}
	s := c.Site
	for key, v := range map[string]float64{"site.workers": float64(s.Workers), "site.backlog": float64(s.Backlog),
		"site.health_interval_s": s.HealthIntervalS, "site.health_timeout_s": s.HealthTimeoutS, "site.health_fails": float64(s.HealthFails),
		"site.read_timeout_s": s.ReadTimeoutS, "site.client_timeout_s": s.ClientTimeoutS} {
		if v < 0 {
			return keyErr(key, "must not be negative")
		}
	}
	if c.Loki != nil {
		if err := c.Loki.validate(); err != nil {
			return err
		}
	}
	if c.Prometheus != nil {
		if err := c.Prometheus.validate(); err != nil {
			return err
		}
	}
	if c.CloudWatch != nil {
		if err := c.CloudWatch.validate(); err != nil {
			return err
		}
	}
	if r := c.Changes.ConfigRepo; r != "" {
		if st, err := os.Stat(r); err != nil || !st.IsDir() {
			return keyErr("changes.config_repo", "%s is not a directory", r)
		}
	}
	for i, f := range c.Changes.Files {
		if _, err := os.Stat(f); err != nil {
			return keyErr("changes.files."+strconv.Itoa(i), "%v", err)
		}
	}
	return nil
}

// checkSelector checks that a LogQL query starts with a stream selector.
func checkSelector(key, sel string) error {
	s := strings.TrimSpace(sel)
	if s == "" {
		return keyErr(key, "required, e.g. {job=\"caddy\"}")
	}
	if !strings.HasPrefix(s, "{") || !strings.Contains(s, "}") {
		return keyErr(key, "%q is not a LogQL stream selector such as {job=\"caddy\"}", sel)
	}
	return nil
}

// checkPipeline refuses pipelines that rewrite lines: the bundle must hold
// the lines as Caddy wrote them. Line filters, parsers and label filters are
// fine (they select lines without changing them).
func checkPipeline(key, p string) error {
	for _, stage := range []string{"line_format", "decolorize"} {
		if strings.Contains(p, stage) {
			return keyErr(key, "%q rewrites lines: lines are written to the bundle as Loki stores them", stage)
		}
	}
	if p := strings.TrimSpace(p); p != "" && !strings.HasPrefix(p, "|") && !strings.HasPrefix(p, "!") {
		return keyErr(key, "%q does not start with a pipeline stage (|=, !=, |~, !~, | json, ...)", p)
	}
	return nil
}

func (l *Loki) validate() error {
	if err := checkSelector("loki.selector", l.Selector); err != nil {
		return err
	}
	if err := checkPipeline("loki.pipeline", l.Pipeline); err != nil {
		return err
	}
	if l.Limit < 0 {
		return keyErr("loki.limit", "must not be negative")
	}
	if l.Parallel < 0 {
		return keyErr("loki.parallel", "must not be negative")
	}
	if l.SplitBy != nil && (*l.SplitBy < Duration(time.Minute) || time.Duration(*l.SplitBy)%time.Second != 0) {
		return keyErr("loki.split_by", "%s: must be at least 1m, in whole seconds", time.Duration(*l.SplitBy))
	}
	if l.Timeout != nil && *l.Timeout < 0 {
		return keyErr("loki.timeout", "must not be negative")
	}
	names := map[string]bool{}
	for i, lg := range l.Logs {
		key := "loki.logs." + strconv.Itoa(i)
		if !logNameRE.MatchString(lg.Name) {
			return keyErr(key+".name", "%q: use letters, digits, '-', '_' and '.', e.g. caddy or php-fpm", lg.Name)
		}
		if names[lg.Name] {
			return keyErr(key+".name", "%q is used twice", lg.Name)
		}
		names[lg.Name] = true
		if err := checkSelector(key+".selector", lg.Selector); err != nil {
			return err
		}
		if err := checkPipeline(key+".pipeline", lg.Pipeline); err != nil {
			return err
		}
	}
	// Build the client: checks the address, credentials and TLS files.
	lc, err := l.clientConfig()
	if err != nil {
		return err
	}
	if _, err := loki.New(lc); err != nil {
		return keyErr("loki", "%v", err)
	}
	return nil
}

// clientConfig is the loki.Config: this section, then the environment logcli
// reads, then secrets from files.
func (l *Loki) clientConfig() (loki.Config, error) {
	env := loki.ConfigFromEnv()
	or := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	lc := loki.Config{
		Addr:               or(l.Addr, env.Addr),
		Username:           or(l.Username, env.Username),
		OrgID:              or(l.OrgID, env.OrgID),
		CAFile:             or(l.CAFile, env.CAFile),
		CertFile:           or(l.CertFile, env.CertFile),
		KeyFile:            or(l.KeyFile, env.KeyFile),
		InsecureSkipVerify: l.InsecureSkipVerify || env.InsecureSkipVerify,
		Limit:              l.Limit,
		Parallel:           l.Parallel,
		SplitBy:            l.SplitBy.or(0),
		Retries:            l.Retries,
		Timeout:            l.Timeout.or(0),
	}
	if lc.Addr == "" {
		return lc, keyErr("loki.addr", "required (or set %s)", loki.EnvAddr)
	}
	if hasURLPassword(lc.Addr) {
		return lc, keyErr("loki.addr", "%s carries a password: remove it and use %s or password_file", loki.EnvAddr, loki.EnvPassword)
	}
	// A credential file named in this section wins over the environment, and
	// then no credential of the other kind is taken from the environment.
	switch {
	case l.BearerTokenFile != "":
		if _, err := readSecret(l.BearerTokenFile); err != nil {
			return lc, keyErr("loki.bearer_token_file", "%v", err)
		}
		lc.BearerTokenFile, lc.Username = l.BearerTokenFile, l.Username
	case l.PasswordFile != "":
		pw, err := readSecret(l.PasswordFile)
		if err != nil {
			return lc, keyErr("loki.password_file", "%v", err)
		}
		lc.Password = pw
	default:
		lc.Password = env.Password
		lc.BearerToken, lc.BearerTokenFile = env.BearerToken, env.BearerTokenFile
		if lc.BearerTokenFile != "" {
			if _, err := readSecret(lc.BearerTokenFile); err != nil {
				return lc, keyErr("loki", "%s: %v", loki.EnvBearerTokenFile, err)
			}
			lc.BearerToken = ""
		}
	}
	if l.Retries < 0 {
		lc.Retries = -1
	}
	return lc, nil
}

// readSecret reads a secret file; errors name the file, never its content.
func readSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return s, nil
}

// promParser checks series selectors as a stock server parses them.
var promParser = parser.NewParser(parser.Options{})

// SelectorList is Selectors with its default.
func (p *Prometheus) SelectorList() []string {
	if len(p.Selectors) == 0 {
		return append([]string(nil), prometheus.DefaultSelectors...)
	}
	return p.Selectors
}

func (p *Prometheus) validate() error {
	if strings.TrimSpace(p.URL) == "" {
		return keyErr("prometheus.url", "required, e.g. http://prometheus:9090")
	}
	for i, s := range p.Selectors {
		if _, err := promParser.ParseMetricSelector(s); err != nil {
			return keyErr("prometheus.selectors."+strconv.Itoa(i), "%q is not a series selector: %v", s, err)
		}
	}
	if p.Timeout != nil && *p.Timeout < 0 {
		return keyErr("prometheus.timeout", "must not be negative")
	}
	for _, f := range []struct{ key, path string }{{"prometheus.password_file", p.PasswordFile}, {"prometheus.bearer_token_file", p.BearerTokenFile}} {
		if f.path != "" {
			if _, err := readSecret(f.path); err != nil {
				return keyErr(f.key, "%v", err)
			}
		}
	}
	if _, err := prometheus.New(p.clientConfig()); err != nil {
		return keyErr("prometheus", "%v", err)
	}
	return nil
}

// clientConfig is the prometheus.Config: this section, then the environment.
func (p *Prometheus) clientConfig() prometheus.Config {
	pc := prometheus.Config{
		URL:                p.URL,
		Username:           p.Username,
		PasswordFile:       p.PasswordFile,
		BearerTokenFile:    p.BearerTokenFile,
		CAFile:             p.CAFile,
		InsecureSkipVerify: p.InsecureSkipVerify,
		Timeout:            p.Timeout.or(0),
		Retries:            p.Retries,
		Headers:            p.Headers,
	}
	// A credential file named in this section wins over the environment, and
	// then no credential of the other kind is taken from the environment.
	envUser := os.Getenv(EnvPrometheusUsername)
	switch {
	case pc.BearerTokenFile != "":
	case pc.PasswordFile != "":
		if pc.Username == "" {
			pc.Username = envUser
		}
	case pc.Username != "" || envUser != "":
		if pc.Username == "" {
			pc.Username = envUser
		}
		pc.Password = os.Getenv(EnvPrometheusPassword)
	default:
		pc.BearerToken = os.Getenv(EnvPrometheusBearerToken)
		if pc.BearerToken == "" {
			pc.Password = os.Getenv(EnvPrometheusPassword)
		}
	}
	return pc
}

func (cw *CloudWatch) validate() error {
	if len(cw.InstanceIDs) == 0 && len(cw.Metrics) == 0 {
		return keyErr("cloudwatch", "set instance_ids or metrics")
	}
	for i, id := range cw.InstanceIDs {
		if strings.TrimSpace(id) == "" {
			return keyErr("cloudwatch.instance_ids."+strconv.Itoa(i), "empty instance id")
		}
	}
	for i, m := range cw.Metrics {
		if err := m.Validate(); err != nil {
			return keyErr("cloudwatch.metrics."+strconv.Itoa(i), "%v", err)
		}
	}
	if cw.MaxAttempts < 0 {
		return keyErr("cloudwatch.max_attempts", "must not be negative")
	}
	return nil
}

func (cw *CloudWatch) clientConfig() cloudwatch.Config {
	return cloudwatch.Config{
		Region: cw.Region, Profile: cw.Profile, Endpoint: cw.Endpoint,
		InstanceIDs: cw.InstanceIDs, Metrics: cw.Metrics, MaxAttempts: cw.MaxAttempts,
	}
}
