package live

import (
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/common/config"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/aftermath-forensics/aftermath/sources/httpauth"
	"github.com/aftermath-forensics/aftermath/sources/prometheus"
)

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
	// CAFile is a PEM bundle of the CAs trusted (instead of the system's).
	CAFile string `yaml:"ca_file"`
	// InsecureSkipVerify turns off TLS certificate verification. Default false.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
	// Timeout bounds one query. Default 2m.
	Timeout *Duration `yaml:"timeout"`
	// Retries is how many times a query is retried after a 429, a 5xx or a broken
	// connection. Default 2; -1 for none.
	Retries int `yaml:"retries"`
	// HTTP is the http: block, the same shape as Loki's (see Loki.HTTP).
	// The flat keys above still work and are merged into it; a setting given
	// both ways is an error. Credentials set here win over the environment's.
	HTTP *config.HTTPClientConfig `yaml:"http"`
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
		HTTP:               p.HTTP,
	}
	// A credential file named in this section wins over the environment, and
	// then no credential of the other kind is taken from the environment.
	envUser := os.Getenv(EnvPrometheusUsername)
	switch {
	case httpauth.HasAuth(p.HTTP):
		// Credentials of the http: block: none from the environment.
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
