package prometheus

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

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
	// CAFile is a PEM bundle of CAs trusted in addition to the system's.
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
	return fmt.Sprintf("prometheus.Config{URL:%q, Username:%q, Password:%q, PasswordFile:%q, BearerToken:%q, BearerTokenFile:%q, CAFile:%q, InsecureSkipVerify:%t, Timeout:%s, Retries:%d, Headers:[%s]}",
		redact.URL(c.URL), redact.Value(c.Username), redact.Value(c.Password), c.PasswordFile, redact.Value(c.BearerToken),
		c.BearerTokenFile, c.CAFile, c.InsecureSkipVerify, c.Timeout, c.Retries, strings.Join(names, " "))
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

// transport builds the HTTP transport: TLS settings, then credentials and
// headers added to every request.
func (c Config) transport() (http.RoundTripper, error) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	tc, err := httpauth.TLSConfig(c.CAFile, "", "", c.InsecureSkipVerify)
	if err != nil {
		return nil, fmt.Errorf("prometheus: %w", err)
	}
	base.TLSClientConfig = tc
	return &authTransport{base: base, cfg: c}, nil
}

// authTransport adds credentials and configured headers to each request.
type authTransport struct {
	base http.RoundTripper
	cfg  Config
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	// A RoundTripper must not modify the caller's request.
	req = req.Clone(req.Context())
	for k, v := range t.cfg.Headers {
		req.Header.Set(k, v)
	}
	c := t.cfg
	switch {
	case c.BearerToken != "" || c.BearerTokenFile != "":
		tok, err := secret(c.BearerToken, c.BearerTokenFile, "bearer token")
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	case c.Username != "" || c.Password != "" || c.PasswordFile != "":
		pw, err := secret(c.Password, c.PasswordFile, "password")
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(c.Username+":"+pw)))
	}
	return t.base.RoundTrip(req)
}

// secret is httpauth.Secret with the source in its error.
func secret(value, file, what string) (string, error) {
	v, err := httpauth.Secret(value, file, what)
	if err != nil {
		return "", fmt.Errorf("prometheus: %w", err)
	}
	return v, nil
}
