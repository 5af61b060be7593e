// Package httpauth holds what the live HTTP clients (sources/loki and
// sources/prometheus) share about reaching a server: its base URL with the
// credentials it carried moved out, secrets read from files, and TLS settings.
// Errors name files, never their content; callers prefix them with their
// source ("loki: ...").
package httpauth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
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

// TLSConfig builds the TLS settings: the system roots plus the PEM CAs in
// caFile (when set), a client certificate (when certFile or keyFile is set),
// and insecureSkipVerify.
func TLSConfig(caFile, certFile, keyFile string, insecureSkipVerify bool) (*tls.Config, error) {
	tc := &tls.Config{InsecureSkipVerify: insecureSkipVerify} //nolint:gosec // opt-in, as logcli's --tls-skip-verify and Prometheus' insecure_skip_verify
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", caFile)
		}
		tc.RootCAs = pool
	}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("loading client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// ErrBasicAndBearer is the error for a configuration that sets both basic
// auth and a bearer token.
var ErrBasicAndBearer = errors.New("basic auth (username/password) and a bearer token are mutually exclusive")
