package sources

// Site holds the facts about the site that logs cannot tell: pool size, backlog,
// health check, cookie pattern and the clients' patience. Zero means unknown; a
// detector that needs an unknown fact says so in data_quality instead of guessing.
type Site struct {
	// Host is the site's host name (e.g. "wiki.example.org"), for the
	// humans who read the bundle; the detectors do not use it.
	Host string `yaml:"host,omitempty" json:"host,omitempty"`
	// Application names what runs behind PHP (e.g. "MediaWiki 1.42"): a
	// naming hint for the humans, never a detector's input.
	Application string `yaml:"application,omitempty" json:"application,omitempty"`
	// Workers is php-fpm's pm.max_children (static pool size).
	Workers int `yaml:"workers,omitempty" json:"workers,omitempty"`
	// Backlog is php-fpm's listen.backlog in force (the metric phpfpm_listen_queue_length wins when present).
	Backlog int `yaml:"backlog,omitempty" json:"backlog,omitempty"`
	// HealthURI is the path of the proxy's active health check, e.g. "/healthz.php".
	HealthURI string `yaml:"health_uri,omitempty" json:"health_uri,omitempty"`
	// HealthIntervalS is the active health check interval, in seconds.
	HealthIntervalS float64 `yaml:"health_interval_s,omitempty" json:"health_interval_s,omitempty"`
	// HealthTimeoutS is Caddy's health_timeout, in seconds.
	HealthTimeoutS float64 `yaml:"health_timeout_s,omitempty" json:"health_timeout_s,omitempty"`
	// HealthFails is Caddy's health_fails: consecutive failures before marking down.
	HealthFails int `yaml:"health_fails,omitempty" json:"health_fails,omitempty"`
	// ReadTimeoutS is the FastCGI transport's read_timeout, in seconds; 0 means none
	// (then a queued health check waits and passes, so it cannot fail).
	ReadTimeoutS float64 `yaml:"read_timeout_s,omitempty" json:"read_timeout_s,omitempty"`
	// LoggedInCookie marks a logged-in user's Cookie header: a substring
	// ("wikiUserID=", "_session=") or a regular expression, as sites write it
	// ("wordpress_logged_in_[0-9a-f]{32}="); see CookiePattern.
	LoggedInCookie string `yaml:"logged_in_cookie,omitempty" json:"logged_in_cookie,omitempty"`
	// ClientTimeoutS is how long a reader waits before giving up, in seconds: a 200
	// logged after it reached nobody.
	ClientTimeoutS float64 `yaml:"client_timeout_s,omitempty" json:"client_timeout_s,omitempty"`
}
