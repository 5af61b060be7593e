package loki

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/config"

	"github.com/aftermath-forensics/aftermath/sources/httpauth"
	"github.com/aftermath-forensics/aftermath/sources/redact"
)

// Defaults for the zero values of Config.
const (
	DefaultLimit    = 5000 // Loki's default max_entries_limit_per_query
	DefaultParallel = 4
	DefaultSplitBy  = time.Hour
	DefaultRetries  = 5
	DefaultTimeout  = time.Minute
)

// Environment variables read by ConfigFromEnv: the ones logcli reads.
const (
	EnvAddr            = "LOKI_ADDR"
	EnvUsername        = "LOKI_USERNAME"
	EnvPassword        = "LOKI_PASSWORD"
	EnvBearerToken     = "LOKI_BEARER_TOKEN"
	EnvBearerTokenFile = "LOKI_BEARER_TOKEN_FILE"
	EnvOrgID           = "LOKI_ORG_ID"
	EnvCACertPath      = "LOKI_CA_CERT_PATH"
	EnvClientCertPath  = "LOKI_CLIENT_CERT_PATH"
	EnvClientKeyPath   = "LOKI_CLIENT_KEY_PATH"
	EnvTLSSkipVerify   = "LOKI_TLS_SKIP_VERIFY"
)

// Config says where Loki is, how to authenticate and how hard to pull.
//
// Password and BearerToken are secrets: they never leave the process except in
// the Authorization header. String, GoString and LogValue redact them (and the
// user name), and they are excluded from YAML and JSON so a config never lands
// in a bundle with them.
type Config struct {
	// Addr is Loki's base URL, e.g. "https://logs.example.com" (a path prefix is
	// kept). User info in the URL is moved to Username/Password.
	Addr            string `yaml:"addr" json:"addr"`
	Username        string `yaml:"-" json:"-"`
	Password        string `yaml:"-" json:"-"`
	BearerToken     string `yaml:"-" json:"-"`
	BearerTokenFile string `yaml:"bearer_token_file,omitempty" json:"bearer_token_file,omitempty"`
	// OrgID is sent as X-Scope-OrgID (tenant; "a|b" queries several).
	OrgID              string `yaml:"org_id,omitempty" json:"org_id,omitempty"`
	CAFile             string `yaml:"ca_file,omitempty" json:"ca_file,omitempty"`
	CertFile           string `yaml:"cert_file,omitempty" json:"cert_file,omitempty"`
	KeyFile            string `yaml:"key_file,omitempty" json:"key_file,omitempty"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify,omitempty" json:"insecure_skip_verify,omitempty"`
	// HTTP is the http: block (Prometheus' HTTP client settings: basic_auth,
	// authorization, oauth2, tls_config, proxy_url, http_headers, ...), the
	// same shape as Prometheus'. The flat credential and TLS fields above
	// are merged into it; one setting given both ways is an error. Its
	// secrets marshal as "<secret>".
	HTTP *config.HTTPClientConfig `yaml:"http,omitempty" json:"http,omitempty"`

	// Limit is the number of lines asked for per query_range call (default 5000).
	// It must not exceed the server's max_entries_limit_per_query; when Loki
	// refuses it with "max entries limit per query exceeded" the client lowers it
	// to the server's maximum, retries, and reports that in the result.
	Limit int `yaml:"limit,omitempty" json:"limit,omitempty"`
	// Parallel is the number of sub-ranges fetched at once (default 4).
	Parallel int `yaml:"parallel,omitempty" json:"parallel,omitempty"`
	// SplitBy is the length of the sub-ranges a window is cut into (default 1h,
	// at least 1m, whole seconds).
	SplitBy time.Duration `yaml:"split_by,omitempty" json:"split_by,omitempty"`
	// Retries is how many times a request is retried after a 429, a 5xx or a
	// timeout (default 5; negative disables retries).
	Retries int `yaml:"retries,omitempty" json:"retries,omitempty"`
	// Timeout bounds one HTTP request (default 1m); a request that times out is retried.
	Timeout time.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`

	// Progress, when set, is called with running totals while lines are pulled.
	// Calls are serialized; keep it fast (it runs on the delivering goroutine).
	Progress func(Progress) `yaml:"-" json:"-"`
}

// ConfigFromEnv reads the environment variables logcli uses (LOKI_ADDR,
// LOKI_USERNAME, LOKI_PASSWORD, LOKI_BEARER_TOKEN, LOKI_BEARER_TOKEN_FILE,
// LOKI_ORG_ID, LOKI_CA_CERT_PATH, LOKI_CLIENT_CERT_PATH, LOKI_CLIENT_KEY_PATH,
// LOKI_TLS_SKIP_VERIFY). Unset variables leave fields empty; an unparsable
// LOKI_TLS_SKIP_VERIFY leaves verification on.
func ConfigFromEnv() Config {
	skip, _ := strconv.ParseBool(strings.TrimSpace(os.Getenv(EnvTLSSkipVerify)))
	return Config{
		Addr:               os.Getenv(EnvAddr),
		Username:           os.Getenv(EnvUsername),
		Password:           os.Getenv(EnvPassword),
		BearerToken:        os.Getenv(EnvBearerToken),
		BearerTokenFile:    os.Getenv(EnvBearerTokenFile),
		OrgID:              os.Getenv(EnvOrgID),
		CAFile:             os.Getenv(EnvCACertPath),
		CertFile:           os.Getenv(EnvClientCertPath),
		KeyFile:            os.Getenv(EnvClientKeyPath),
		InsecureSkipVerify: skip,
	}
}

const redacted = redact.Mark

// String renders the configuration with every credential redacted.
func (c Config) String() string {
	return fmt.Sprintf("loki.Config{Addr:%q, Username:%q, Password:%q, BearerToken:%q, BearerTokenFile:%q, OrgID:%q, CAFile:%q, CertFile:%q, KeyFile:%q, InsecureSkipVerify:%t, HTTP:%q, Limit:%d, Parallel:%d, SplitBy:%s, Retries:%d, Timeout:%s}",
		redact.URL(c.Addr), redact.Value(c.Username), redact.Value(c.Password), redact.Value(c.BearerToken), c.BearerTokenFile,
		c.OrgID, c.CAFile, c.CertFile, c.KeyFile, c.InsecureSkipVerify, httpauth.Describe(c.HTTP), c.Limit, c.Parallel, c.SplitBy, c.Retries, c.Timeout)
}

// GoString makes %#v redact as well.
func (c Config) GoString() string { return c.String() }

// LogValue makes log/slog redact as well.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalJSON writes the configuration without credentials (they are already
// excluded field by field; this also strips user info from Addr).
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	p := plain(c)
	p.Addr = stripUserinfo(p.Addr)
	return json.Marshal(p)
}

// MarshalYAML is MarshalJSON's counterpart for bundle.yaml and config files.
func (c Config) MarshalYAML() (any, error) {
	type plain Config
	p := plain(c)
	p.Addr = stripUserinfo(p.Addr)
	return p, nil
}

func stripUserinfo(addr string) string {
	if u, err := url.Parse(addr); err == nil && u.User != nil {
		u.User = nil
		return u.String()
	}
	if strings.Contains(addr, "@") {
		return ""
	}
	return addr
}

// normalized returns c with defaults filled in and user info moved out of Addr.
func (c Config) normalized() (Config, error) {
	if strings.TrimSpace(c.Addr) == "" {
		return c, fmt.Errorf("loki: no address (set %s or the config's loki addr)", EnvAddr)
	}
	addr, user, pass, ok := httpauth.BaseURL(c.Addr, c.Username, c.Password)
	if !ok {
		// Never echo the address: it may carry a password.
		return c, fmt.Errorf("loki: address %s is not an http(s) URL", redact.URL(c.Addr))
	}
	c.Addr, c.Username, c.Password = addr, user, pass
	if c.Limit <= 0 {
		c.Limit = DefaultLimit
	}
	if c.Parallel <= 0 {
		c.Parallel = DefaultParallel
	}
	if c.SplitBy <= 0 {
		c.SplitBy = DefaultSplitBy
	}
	if c.SplitBy < time.Minute || c.SplitBy%time.Second != 0 {
		return c, fmt.Errorf("loki: split_by %s must be at least 1m and whole seconds", c.SplitBy)
	}
	switch {
	case c.Retries == 0:
		c.Retries = DefaultRetries
	case c.Retries < 0:
		c.Retries = 0
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	return c, nil
}

// httpSettings is the http: block with the flat credential and TLS fields
// merged in (httpauth.Settings).
func (c Config) httpSettings() (config.HTTPClientConfig, error) {
	hc, err := httpauth.Settings(c.HTTP, httpauth.Flat{Username: c.Username, Password: c.Password,
		BearerToken: c.BearerToken, BearerTokenFile: c.BearerTokenFile,
		CAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile, InsecureSkipVerify: c.InsecureSkipVerify})
	if err != nil {
		return hc, fmt.Errorf("loki: %w", err)
	}
	return hc, nil
}
