// Package httpauth holds what the live HTTP clients (sources/loki and
// sources/prometheus) share about reaching a server: its base URL with the
// credentials it carried moved out, and the HTTP client settings (auth, TLS,
// proxy, headers) as Prometheus' own HTTP client configuration
// (github.com/prometheus/common/config.HTTPClientConfig, the shape of a
// scrape config's basic_auth, authorization, oauth2, tls_config, proxy_url
// and http_headers), which builds the transport. Both sources take the same
// http: block; the flat keys they took before it (username, password_file,
// bearer_token_file, ca_file, cert_file, key_file, insecure_skip_verify) are
// merged into it (Flat). Errors name files and keys, never their content;
// callers prefix them with their source ("loki: ...").
package httpauth

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/prometheus/common/config"
)

// BaseURL normalizes a server's base URL: surrounding space, user info, query
// and fragment removed, trailing slashes trimmed (a path prefix is kept). The
// username and password the URL carried fill in username and password where
// those are empty. ok is false when raw is not an http(s) URL with a host; do
// not echo raw then, it may carry a password.
func BaseURL(raw, username, password string) (base, user, pass string, ok bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", "", "", false
	}
	if u.User != nil {
		if username == "" {
			username = u.User.Username()
		}
		if p, ok := u.User.Password(); ok && password == "" {
			password = p
		}
		u.User = nil
	}
	u.RawQuery, u.Fragment = "", ""
	u.Path = strings.TrimRight(u.Path, "/")
	return u.String(), username, password, true
}

// Secret returns value, or the trimmed content of file when value is empty
// and file is set. what names the secret in the error ("bearer token").
func Secret(value, file, what string) (string, error) {
	if value != "" || file == "" {
		return value, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading %s file: %w", what, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// ErrBasicAndBearer is the error for a configuration that sets both basic
// auth and a bearer token.
var ErrBasicAndBearer = errors.New("basic auth (username/password) and a bearer token are mutually exclusive")

// Flat is the flat settings a source took before the http: block (and its
// environment's credentials): basic auth, a bearer token, TLS files.
type Flat struct {
	Username, Password, PasswordFile string
	BearerToken, BearerTokenFile     string
	CAFile, CertFile, KeyFile        string
	InsecureSkipVerify               bool
}

// Settings returns hc (nil: Prometheus' defaults, redirects followed and
// HTTP/2 on) with f's settings added. A setting given both ways (a flat key
// and its http: counterpart) is an error naming both keys, as is basic auth
// beside a bearer token.
func Settings(hc *config.HTTPClientConfig, f Flat) (config.HTTPClientConfig, error) {
	out := config.DefaultHTTPClientConfig
	if hc != nil {
		out = *hc
	}
	basic := f.Username != "" || f.Password != "" || f.PasswordFile != ""
	bearer := f.BearerToken != "" || f.BearerTokenFile != ""
	if basic && bearer {
		return out, ErrBasicAndBearer
	}
	hasAuth := out.BasicAuth != nil || out.Authorization != nil || out.OAuth2 != nil || out.BearerToken != "" || out.BearerTokenFile != ""
	switch {
	case (basic || bearer) && hasAuth:
		return out, errors.New("credentials are set both by the flat keys (username, password_file, bearer_token_file) and by the http: block: keep one")
	case basic:
		out.BasicAuth = &config.BasicAuth{Username: f.Username, Password: config.Secret(f.Password), PasswordFile: f.PasswordFile}
	case bearer:
		out.Authorization = &config.Authorization{Type: "Bearer", Credentials: config.Secret(f.BearerToken), CredentialsFile: f.BearerTokenFile}
	}
	tc := &out.TLSConfig
	for _, s := range []struct {
		flat string
		dst  *string
		key  string
	}{{f.CAFile, &tc.CAFile, "ca_file"}, {f.CertFile, &tc.CertFile, "cert_file"}, {f.KeyFile, &tc.KeyFile, "key_file"}} {
		if s.flat == "" {
			continue
		}
		if *s.dst != "" && *s.dst != s.flat {
			return out, fmt.Errorf("%s is set both as a flat key and in http.tls_config: keep one", s.key)
		}
		*s.dst = s.flat
	}
	tc.InsecureSkipVerify = tc.InsecureSkipVerify || f.InsecureSkipVerify
	// Go's default transport honours HTTPS_PROXY and NO_PROXY, as both
	// clients did before the http: block: keep that unless a proxy is set.
	if out.ProxyURL.URL == nil && !out.ProxyFromEnvironment && len(out.ProxyConnectHeader) == 0 {
		out.ProxyFromEnvironment = true
	}
	return out, nil
}

// HasAuth reports whether hc sets credentials of any kind.
func HasAuth(hc *config.HTTPClientConfig) bool {
	return hc != nil && (hc.BasicAuth != nil || hc.Authorization != nil || hc.OAuth2 != nil || hc.BearerToken != "" || hc.BearerTokenFile != "")
}

// RoundTripper checks hc (its own rules, then that the files it names are
// readable, with errors naming the file and never its content) and builds
// the transport it describes: credentials (files read at every request, so a
// rotated secret is picked up), TLS, proxy and headers. Compression is left
// to the caller (the transport does not ask for gzip by itself). name labels
// the connections (the source's name).
func RoundTripper(hc config.HTTPClientConfig, name string) (http.RoundTripper, error) {
	if err := hc.Validate(); err != nil {
		return nil, err
	}
	if err := checkFiles(hc); err != nil {
		return nil, err
	}
	rt, err := config.NewRoundTripperFromConfig(hc, name)
	if err != nil {
		return nil, err
	}
	return rt, nil
}

// NoRedirects is an http.Client's CheckRedirect for settings that say not to
// follow redirects (follow_redirects: false).
func NoRedirects(hc config.HTTPClientConfig) func(*http.Request, []*http.Request) error {
	if hc.FollowRedirects {
		return nil
	}
	return func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
}

// checkFiles reads the files hc names, so that a missing file or a CA file
// without a certificate fails before any request, naming the file.
func checkFiles(hc config.HTTPClientConfig) error {
	tc := hc.TLSConfig
	if tc.CAFile != "" {
		pem, err := os.ReadFile(tc.CAFile)
		if err != nil {
			return fmt.Errorf("reading CA file: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return fmt.Errorf("CA file %s holds no PEM certificate", tc.CAFile)
		}
	}
	if (tc.CertFile != "") != (tc.KeyFile != "") {
		return errors.New("loading client certificate: cert_file and key_file go together")
	}
	for _, f := range []struct{ path, what string }{{tc.CertFile, "client certificate"}, {tc.KeyFile, "client key"}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return fmt.Errorf("loading %s: %w", f.what, err)
		}
	}
	for _, f := range secretFiles(hc) {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("reading secret file: %w", err)
		}
	}
	return nil
}

// secretFiles are the files hc reads credentials from.
func secretFiles(hc config.HTTPClientConfig) []string {
	var out []string
	add := func(f string) {
		if f != "" {
			out = append(out, f)
		}
	}
	if b := hc.BasicAuth; b != nil {
		add(b.UsernameFile)
		add(b.PasswordFile)
	}
	if a := hc.Authorization; a != nil {
		add(a.CredentialsFile)
	}
	if o := hc.OAuth2; o != nil {
		add(o.ClientSecretFile)
	}
	add(hc.BearerTokenFile)
	if h := hc.HTTPHeaders; h != nil {
		for _, v := range h.Headers {
			for _, f := range v.Files {
				add(f)
			}
		}
	}
	return out
}

// Secrets are the credentials hc sends, inline or read from its files now
// (best effort: a file that cannot be read fails the request instead), for
// scrubbing from errors: a server or proxy may echo them back.
func Secrets(hc config.HTTPClientConfig) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if b := hc.BasicAuth; b != nil {
		add(b.Username)
		add(string(b.Password))
	}
	if a := hc.Authorization; a != nil {
		add(string(a.Credentials))
	}
	if o := hc.OAuth2; o != nil {
		add(string(o.ClientSecret))
	}
	add(string(hc.BearerToken))
	if h := hc.HTTPHeaders; h != nil {
		for _, v := range h.Headers {
			for _, s := range v.Secrets {
				add(string(s))
			}
		}
	}
	for _, f := range secretFiles(hc) {
		if b, err := os.ReadFile(f); err == nil {
			add(string(b))
		}
	}
	return out
}

// Describe names what hc sets (auth kind, TLS, proxy, header names), never a
// value: for String methods and logs.
func Describe(hc *config.HTTPClientConfig) string {
	if hc == nil {
		return "default"
	}
	var parts []string
	switch {
	case hc.BasicAuth != nil:
		parts = append(parts, "basic_auth")
	case hc.Authorization != nil:
		parts = append(parts, "authorization "+hc.Authorization.Type)
	case hc.OAuth2 != nil:
		parts = append(parts, "oauth2")
	case hc.BearerToken != "" || hc.BearerTokenFile != "":
		parts = append(parts, "bearer_token")
	}
	if tc := hc.TLSConfig; tc.CAFile != "" || tc.CertFile != "" || tc.InsecureSkipVerify || tc.CA != "" || tc.ServerName != "" {
		parts = append(parts, "tls_config")
	}
	if hc.ProxyURL.URL != nil || hc.ProxyFromEnvironment {
		parts = append(parts, "proxy")
	}
	if h := hc.HTTPHeaders; h != nil && len(h.Headers) > 0 {
		names := make([]string, 0, len(h.Headers))
		for k := range h.Headers {
			names = append(names, k)
		}
		slices.Sort(names)
		parts = append(parts, "http_headers "+strings.Join(names, ","))
	}
	if !hc.FollowRedirects {
		parts = append(parts, "no redirects")
	}
	if len(parts) == 0 {
		return "default"
	}
	return strings.Join(parts, "; ")
}

// Basic is hc's basic-auth user name and password (read from their files
// now; "" when unset or unreadable), for scrubbing the encoded pair from
// errors as well.
func Basic(hc config.HTTPClientConfig) (user, pass string) {
	b := hc.BasicAuth
	if b == nil {
		return "", ""
	}
	user, _ = Secret(b.Username, b.UsernameFile, "username")
	pass, _ = Secret(string(b.Password), b.PasswordFile, "password")
	return user, pass
}
