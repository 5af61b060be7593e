package live

import (
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/aftermath-forensics/aftermath/sources/loki"
)

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
	// The http: block's inline secrets (Prometheus' HTTP client settings).
	"credentials": "credentials_file",
	"secrets":     "files",
}

// tlsSecretKeys are the tls_config keys that hold a private key inline.
var tlsSecretKeys = map[string]string{"key": "key_file"}

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
			instead, ok := secretKeys[key]
			if !ok && len(path) > 0 && path[len(path)-1] == "tls_config" {
				instead, ok = tlsSecretKeys[key]
			}
			if ok {
				section := ""
				if len(path) > 0 {
					section = path[0]
				}
				return &Error{File: file, Line: k.Line, Key: strings.Join(p, "."),
					Msg: "secrets are not read from the configuration file: use " + instead + envHint(section, key) + " instead"}
			}
			if isHeaders(path) && credentialHeader.MatchString(k.Value) && !onlyFiles(v) {
				return &Error{File: file, Line: k.Line, Key: strings.Join(p, "."),
					Msg: "credentials are not read from the configuration file: use bearer_token_file or password_file, " +
						"an http: block's credentials_file or http_headers files, or " + EnvPrometheusBearerToken + " / " + EnvPrometheusPassword}
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

// isHeaders reports whether path is a section's headers: prometheus'
// headers, or either source's http.http_headers.
func isHeaders(path []string) bool {
	return (len(path) == 2 && path[1] == "headers") || (len(path) == 3 && path[1] == "http" && path[2] == "http_headers")
}

// onlyFiles reports whether an http_headers entry takes its values from
// files only (files: [...]), the one way a credential header may be set.
func onlyFiles(v *yaml.Node) bool {
	if v.Kind != yaml.MappingNode || len(v.Content) == 0 {
		return false
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		if v.Content[i].Value != "files" {
			return false
		}
	}
	return true
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
