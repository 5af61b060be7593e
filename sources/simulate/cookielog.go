package simulate

// CookieLog is how a site's access log keeps the Cookie header (issue 25:
// the detectors were written on logs that kept it whole). Caddy replaces
// its value with REDACTED unless the server sets log_credentials, and a
// log filter can delete it; an analysis can then tell a logged-in user
// only by other signs, or not at all, and must say so.
type CookieLog uint8

// Cookie logging. The zero value is the older scenarios' (the header as
// sent), so that their output stays as it was.
const (
	CookieLogged CookieLog = iota
	CookieRedacted
	CookieOmitted
)

// String names the mode in truth.json.
func (c CookieLog) String() string {
	switch c {
	case CookieRedacted:
		return "redacted"
	case CookieOmitted:
		return "omitted"
	}
	return "logged"
}
