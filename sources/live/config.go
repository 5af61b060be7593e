package live

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/aftermath-forensics/aftermath/sources"
)

// Defaults of aftermath.yaml.
const (
	DefaultBaseline       = 3 * time.Hour
	DefaultPushdownAfter  = 3 * time.Hour
	DefaultPushdownFactor = 3.0
	DefaultPushdownMargin = 10 * time.Minute
	// DefaultPushdownMaxShare: a pushdown that would pull half of a full
	// pull's bytes or more is not worth what it costs Loki (see
	// Pushdown.MaxShare).
	DefaultPushdownMaxShare = 0.5
	// DefaultBaselineSampleBlocks blocks of DefaultBaselineSampleBlock each
	// are the baseline's raw sample under pushdown: half an hour, enough
	// fingerprints, latencies and route costs for the detectors' baseline at a
	// sixth of a 3 h baseline's lines.
	DefaultBaselineSampleBlocks = 3
	DefaultBaselineSampleBlock  = 10 * time.Minute
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
	// lines) is at least Factor times the median of the unflagged minutes in
	// the three hours before it and more than three Poisson deviations above
	// it (failure.Excess). A client family is judged the same way over
	// 10-minute stretches. Default 3; must be at least 1.
	Factor float64 `yaml:"factor"`
	// Margin is how much time around each flagged minute is pulled as well,
	// on both sides, so onsets and recoveries are read. Default 10m.
	Margin *Duration `yaml:"margin"`
	// BaselineSampleBlocks and BaselineSampleBlock are the baseline's raw
	// sample: that many stretches of that length, spread evenly over the
	// baseline, the last one ending at the window (the rest of the baseline is
	// counted in Loki). A baseline no longer than the sample is pulled whole.
	// Default 3 blocks of 10m; at least 1 block of at least 1m, in whole
	// minutes.
	BaselineSampleBlocks *int      `yaml:"baseline_sample_blocks"`
	BaselineSampleBlock  *Duration `yaml:"baseline_sample_block"`
	// MaxShare is the cost model's bar: a pushdown is chosen only when the
	// minutes it would pull hold less than this share of a full pull's bytes
	// (bytes_over_time per minute, asked before any parsing query); above
	// it the window is pulled whole, as a pushdown costs Loki more than a
	// full pull (every query over the range reads all of it again). Default
	// 0.5; 1 always pushes down. Between 0 and 1.
	MaxShare *float64 `yaml:"max_share"`
}

func (p Pushdown) maxShare() float64 {
	if p.MaxShare == nil {
		return DefaultPushdownMaxShare
	}
	return *p.MaxShare
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

// baselineSample is the sample of the baseline pulled raw, with its defaults.
func (p Pushdown) baselineSample() baselineSampling {
	s := baselineSampling{blocks: DefaultBaselineSampleBlocks, block: int(p.BaselineSampleBlock.or(DefaultBaselineSampleBlock) / time.Minute)}
	if p.BaselineSampleBlocks != nil {
		s.blocks = *p.BaselineSampleBlocks
	}
	return s
}

// Location is the time zone (UTC when none is set).
func (c *Config) Location() (*time.Location, error) {
	if c.Timezone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(c.Timezone)
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
	if err := refuseOtherSourceKeys(path, doc); err != nil {
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
		l.HTTP.SetDirectory(dir)
	}
	if p := c.Prometheus; p != nil {
		for _, q := range []*string{&p.PasswordFile, &p.BearerTokenFile, &p.CAFile} {
			abs(q)
		}
		p.HTTP.SetDirectory(dir)
	}
	abs(&c.Changes.ConfigRepo)
	for i := range c.Changes.Files {
		abs(&c.Changes.Files[i])
	}
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
	if m := c.Pushdown.MaxShare; m != nil && (*m <= 0 || *m > 1 || *m != *m) {
		return keyErr("pushdown.max_share", "%g: must be above 0 and at most 1", *m)
	}
	if f := c.Pushdown.Factor; f != 0 && (f < 1 || f != f) {
		return keyErr("pushdown.factor", "%g: must be at least 1", f)
	}
	// The detectors need raw lines of the baseline (fingerprints, latencies,
	// route costs): a sample of nothing would leave them without.
	if n := c.Pushdown.BaselineSampleBlocks; n != nil && *n < 1 {
		return keyErr("pushdown.baseline_sample_blocks", "%d: must be at least 1", *n)
	}
	if d := c.Pushdown.BaselineSampleBlock; d != nil && (*d < Duration(time.Minute) || time.Duration(*d)%time.Minute != 0) {
		return keyErr("pushdown.baseline_sample_block", "%s: must be at least 1m, in whole minutes", time.Duration(*d))
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
