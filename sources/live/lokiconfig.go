package live

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/config"

	"github.com/aftermath-forensics/aftermath/sources/httpauth"
	"github.com/aftermath-forensics/aftermath/sources/loki"
)

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
	// CAFile is a PEM bundle of the CAs trusted (instead of the system's, as
	// in logcli). Default: $LOKI_CA_CERT_PATH.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a client certificate for mutual TLS. Default:
	// $LOKI_CLIENT_CERT_PATH and $LOKI_CLIENT_KEY_PATH.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// InsecureSkipVerify turns off TLS certificate verification (also on when
	// $LOKI_TLS_SKIP_VERIFY is true). Default false.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
	// HTTP is the http: block, the same shape for Loki and Prometheus:
	// Prometheus' HTTP client settings (basic_auth, authorization, oauth2,
	// tls_config, proxy_url, http_headers, follow_redirects, enable_http2),
	// with secrets in files (password_file, credentials_file). The flat keys
	// above still work and are merged into it; a setting given both ways is
	// an error. Credentials set here win over the environment's.
	HTTP *config.HTTPClientConfig `yaml:"http"`

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

var logNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

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
	// The environment fills in a TLS file only where neither a flat key nor
	// the http: block names one.
	var tlsHTTP config.TLSConfig
	if l.HTTP != nil {
		tlsHTTP = l.HTTP.TLSConfig
	}
	envFile := func(flat, inHTTP, fromEnv string) string {
		if flat != "" || inHTTP != "" {
			return flat
		}
		return fromEnv
	}
	lc := loki.Config{
		Addr:               or(l.Addr, env.Addr),
		Username:           or(l.Username, env.Username),
		OrgID:              or(l.OrgID, env.OrgID),
		CAFile:             envFile(l.CAFile, tlsHTTP.CAFile, env.CAFile),
		CertFile:           envFile(l.CertFile, tlsHTTP.CertFile, env.CertFile),
		KeyFile:            envFile(l.KeyFile, tlsHTTP.KeyFile, env.KeyFile),
		InsecureSkipVerify: l.InsecureSkipVerify || env.InsecureSkipVerify,
		HTTP:               l.HTTP,
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
	case httpauth.HasAuth(l.HTTP):
		// Credentials of the http: block: none from the environment.
		lc.Username = l.Username
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
