package request

import (
	"testing"

	"github.com/aftermath-forensics/aftermath/sources"
)

// TestFromClient: the proxy's health check (even sent by PHP's own HTTP
// client) is the probe's and PHP calling its own API the site's, neither a
// client's; a MediaWiki user agent on a page (not the API) is a client like
// any other, and so is curl on the API. FromClient says the same as SenderOf.
func TestFromClient(t *testing.T) {
	for _, c := range []struct {
		path, ua string
		want     Sender
	}{
		{"/healthz.php", "Go-http-client/1.1", SentByProbe},
		{"/healthz.php", "GuzzleHttp/7", SentByProbe},
		{"/w/api.php", "MediaWiki/1.41.1", SentBySite},
		{"/w/api.php", "GuzzleHttp/7", SentBySite},
		{"/w/api.php", "curl/8.5.0", SentByClient},
		{"/wiki/Seoul", "MediaWiki/1.41.1", SentByClient},
		{"/wiki/Seoul", "Mozilla/5.0 Firefox/131.0", SentByClient},
	} {
		r := &sources.Request{Path: c.path, UserAgent: c.ua}
		class := ClassifyPath(r.Path, r.Query, "/healthz.php")
		if got := SenderOf(class, r); got != c.want {
			t.Errorf("SenderOf(%s by %q) = %v, want %v", c.path, c.ua, got, c.want)
		}
		if got := FromClient(class, r); got != (c.want == SentByClient) {
			t.Errorf("FromClient(%s by %q) = %v, want %v", c.path, c.ua, got, c.want == SentByClient)
		}
	}
}
