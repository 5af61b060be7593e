package prometheus

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/config"

	"github.com/aftermath-forensics/aftermath/sources/httpauth"
	"github.com/aftermath-forensics/aftermath/sources/redact"
)

// Defaults for the zero values of Config.
const (
	// DefaultTimeout bounds one query (the HTTP request, and the server's own
	// evaluation through the API's timeout parameter).
	DefaultTimeout = 2 * time.Minute
	// DefaultRetries is how many times a query is retried after a 429 or 5xx
	// answer or a broken connection.
	DefaultRetries = 2
)

// Config says where Prometheus is and how to authenticate.
//
// Password, BearerToken and the values of Headers are secrets: they leave the
// process only in request headers. String, GoString, LogValue, MarshalJSON and
// MarshalYAML redact them (and the user name); Password and BearerToken are
// never marshalled at all, so a configuration cannot carry them into a bundle.
type Config struct {
	// URL is the server's base URL, e.g. "http://prometheus:9090" or, for Mimir,
	// "https://mimir.example.com/prometheus" (a path prefix is kept). User info
	// in the URL is moved to Username and Password.
	URL string `yaml:"url" json:"url"`
	// Username and Password are sent as HTTP basic auth. Password may instead
	// come from PasswordFile (read at every request, so a rotated secret is
	// picked up).
	Username     string `yaml:"username,omitempty" json:"username,omitempty"`
	Password     string `yaml:"-" json:"-"`
	PasswordFile string `yaml:"password_file,omitempty" json:"password_file,omitempty"`
	// BearerToken is sent as "Authorization: Bearer ..."; or BearerTokenFile
	// (read at every request). Bearer and basic auth are mutually exclusive.
	BearerToken     string `yaml:"-" json:"-"`
	BearerTokenFile string `yaml:"bearer_token_file,omitempty" json:"bearer_token_file,omitempty"`
	// CAFile is a PEM bundle of the CAs trusted (instead of the system's, as in
	// Prometheus and logcli).
	CAFile string `yaml:"ca_file,omitempty" json:"ca_file,omitempty"`
	// InsecureSkipVerify turns off TLS certificate verification.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify,omitempty" json:"insecure_skip_verify,omitempty"`
	// Timeout bounds one query; default DefaultTimeout (2m).
	Timeout time.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Retries is how many times a query is retried after a 429 or 5xx answer
	// or a broken connection; default DefaultRetries (2), negative for none. Bad
	// queries, timeouts and cancellations are never retried.
	Retries int `yaml:"retries,omitempty" json:"retries,omitempty"`
	// Headers are added to every request, e.g. {"X-Scope-OrgID": "tenant"}
	// for Mimir or Cortex. Their values are treated as secrets.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// HTTP is the http: block (Prometheus' own HTTP client settings:
	// basic_auth, authorization, oauth2, tls_config, proxy_url,
	// http_headers, ...), the same shape as Loki's. The flat credential and
	// TLS fields above are merged into it; one setting given both ways is an
	// error. Its secrets marshal as "<secret>".
	HTTP *config.HTTPClientConfig `yaml:"http,omitempty" json:"http,omitempty"`
}

const redacted = redact.Mark

// stripUserinfo removes user info from a URL for marshalling.
func stripUserinfo(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.Contains(raw, "@") {
			return ""
		}
		return raw
	}
	u.User = nil
	return u.String()
}

// redactedHeaders returns the header names with every value redacted.
func redactedHeaders(h map[string]string) map[string]string {
	if len(h) == 0 {
		return nil
	}
	out := make(map[string]string, len(h))
	for k := range h {
		out[k] = redacted
	}
	return out
}

// String renders the configuration with every credential redacted.
func (c Config) String() string {
	names := make([]string, 0, len(c.Headers))
	for k := range c.Headers {
		names = append(names, k+":"+redacted)
	}
	sort.Strings(names)
	return fmt.Sprintf("prometheus.Config{URL:%q, Username:%q, Password:%q, PasswordFile:%q, BearerToken:%q, BearerTokenFile:%q, CAFile:%q, InsecureSkipVerify:%t, HTTP:%q, Timeout:%s, Retries:%d, Headers:[%s]}",
		redact.URL(c.URL), redact.Value(c.Username), redact.Value(c.Password), c.PasswordFile, redact.Value(c.BearerToken),
		c.BearerTokenFile, c.CAFile, c.InsecureSkipVerify, httpauth.Describe(c.HTTP), c.Timeout, c.Retries, strings.Join(names, " "))
}

// GoString makes %#v redact as well.
func (c Config) GoString() string { return c.String() }

// LogValue makes log/slog redact as well.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// MarshalJSON writes the configuration without credentials: Password and
// BearerToken are excluded field by field, user info is stripped from URL and
// header values are redacted.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	p := plain(c)
	p.URL, p.Headers = stripUserinfo(p.URL), redactedHeaders(p.Headers)
	return json.Marshal(p)
}

// MarshalYAML is MarshalJSON's counterpart for configuration files.
func (c Config) MarshalYAML() (any, error) {
	type plain Config
	p := plain(c)
	p.URL, p.Headers = stripUserinfo(p.URL), redactedHeaders(p.Headers)
	return p, nil
}

// normalized returns c with defaults filled in and user info moved out of URL.
func (c Config) normalized() (Config, error) {
	raw := strings.TrimSpace(c.URL)
	if raw == "" {
		return c, errors.New("prometheus: no URL")
	}
	base, user, pass, ok := httpauth.BaseURL(raw, c.Username, c.Password)
	if !ok {
		// Never echo the address: it may carry a password.
		return c, fmt.Errorf("prometheus: URL %s is not an http(s) URL", redact.URL(raw))
	}
	c.URL, c.Username, c.Password = base, user, pass
	basic := c.Username != "" || c.Password != "" || c.PasswordFile != ""
	bearer := c.BearerToken != "" || c.BearerTokenFile != ""
	if basic && bearer {
		return c, fmt.Errorf("prometheus: %w", httpauth.ErrBasicAndBearer)
	}
	if c.Password != "" && c.PasswordFile != "" {
		return c, errors.New("prometheus: password and password_file are mutually exclusive")
	}
	if c.BearerToken != "" && c.BearerTokenFile != "" {
		return c, errors.New("prometheus: bearer_token and bearer_token_file are mutually exclusive")
	}
	for k := range c.Headers {
		if strings.EqualFold(k, "Authorization") && (basic || bearer) {
			return c, errors.New("prometheus: an Authorization header and basic or bearer auth are mutually exclusive")
		}
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.Retries == 0:
		c.Retries = DefaultRetries
	case c.Retries < 0:
		c.Retries = 0
	}
	return c, nil
}

// httpSettings is the http: block with the flat credential and TLS fields
// and Headers merged in (httpauth.Settings). Header values go in as
// secrets, so that they marshal redacted.
func (c Config) httpSettings() (config.HTTPClientConfig, error) {
	hc, err := httpauth.Settings(c.HTTP, httpauth.Flat{Username: c.Username, Password: c.Password, PasswordFile: c.PasswordFile,
		BearerToken: c.BearerToken, BearerTokenFile: c.BearerTokenFile, CAFile: c.CAFile, InsecureSkipVerify: c.InsecureSkipVerify})
	if err != nil {
		return hc, fmt.Errorf("prometheus: %w", err)
	}
	if len(c.Headers) > 0 {
		h := &config.Headers{Headers: map[string]config.Header{}}
		if hc.HTTPHeaders != nil {
			for k, v := range hc.HTTPHeaders.Headers {
				h.Headers[k] = v
			}
		}
		for k, v := range c.Headers {
			if _, dup := h.Headers[k]; dup {
				return hc, fmt.Errorf("prometheus: header %s is set both in headers and in http.http_headers: keep one", k)
			}
			h.Headers[k] = config.Header{Secrets: []config.Secret{config.Secret(v)}}
		}
		hc.HTTPHeaders = h
	}
	return hc, nil
}

// transport builds the HTTP transport from Prometheus' HTTP client
// settings: TLS, credentials (files read at every request) and headers.
func (c Config) transport() (http.RoundTripper, config.HTTPClientConfig, error) {
	hc, err := c.httpSettings()
	if err != nil {
		return nil, hc, err
	}
	rt, err := httpauth.RoundTripper(hc, "prometheus")
	if err != nil {
		return nil, hc, fmt.Errorf("prometheus: %w", err)
	}
	return rt, hc, nil
}
