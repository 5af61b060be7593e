package replayreport

// Class is who sent a request, as the backtest splits its counts.
type Class int

const (
	// ClassCrawler: a request of a crawler_burst finding's fingerprint.
	ClassCrawler Class = iota
	// ClassOtherLoggedOut: every other request that was not logged in
	// (logged-out, or login unknown because the cookie was REDACTED).
	ClassOtherLoggedOut
	// ClassLoggedIn: a request that carried the site's logged-in cookie.
	ClassLoggedIn
	// NumClasses is how many classes there are (an array of Counts per class).
	NumClasses
)

// String is the class's name in the report's JSON.
func (c Class) String() string {
	switch c {
	case ClassCrawler:
		return "crawler"
	case ClassOtherLoggedOut:
		return "other_logged_out"
	case ClassLoggedIn:
		return "logged_in"
	}
	return "unknown"
}
