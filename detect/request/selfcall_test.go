package request

import (
	"testing"

	"github.com/aftermath-forensics/aftermath/sources"
)

// TestFromClient: the proxy's health check and PHP calling its own API are
// no client; a MediaWiki user agent on a page (not the API) is a client
// like any other, and so is curl on the API.
func TestFromClient(t *testing.T) {
	for _, c := range []struct {
		path, ua string
		want     bool
	}{
		{"/healthz.php", "Go-http-client/1.1", false},
		{"/w/api.php", "MediaWiki/1.41.1", false},
		{"/w/api.php", "GuzzleHttp/7", false},
		{"/w/api.php", "curl/8.5.0", true},
		{"/wiki/Seoul", "MediaWiki/1.41.1", true},
		{"/wiki/Seoul", "Mozilla/5.0 Firefox/131.0", true},
	} {
		r := &sources.Request{Path: c.path, UserAgent: c.ua}
		if got := FromClient(ClassifyPath(r.Path, r.Query, "/healthz.php"), r); got != c.want {
			t.Errorf("FromClient(%s by %q) = %v, want %v", c.path, c.ua, got, c.want)
		}
	}
}
