package detect

import (
	"encoding/json"
	"testing"

	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// TestKeyOfReadsFingerprintOfBack: every key survives report.json, and the
// major versions a crawler finding lists after the family ("Chrome
// 121/120/119") do not make another key; a hand-edited family ending in a
// space is read, not a panic.
func TestKeyOfReadsFingerprintOfBack(t *testing.T) {
	for _, k := range []request.ClusterKey{
		{UA: "Chrome", Lang: "zh-cn", LoggedIn: sources.LoggedInNo, NoClientHints: true},
		{UA: "Firefox", Lang: "", LoggedIn: sources.LoggedInYes},
		{UA: "other bot", Lang: "en-us", LoggedIn: sources.LoggedInUnknown},
		{UA: "Go-http-client", LoggedIn: sources.LoggedInNo},
	} {
		js, err := json.Marshal(FingerprintOf(k))
		if err != nil {
			t.Fatal(err)
		}
		var fp Fingerprint
		if err := json.Unmarshal(js, &fp); err != nil {
			t.Fatal(err)
		}
		if got := KeyOf(fp.UserAgent, fp.AcceptLanguage, fp.LoggedIn, fp.SecChUa); got != k {
			t.Errorf("%v wrote %s, read back as %v", k, js, got)
		}
		withVersions := KeyOf(fp.UserAgent+" 121/120/119", fp.AcceptLanguage, fp.LoggedIn, fp.SecChUa)
		if withVersions != k {
			t.Errorf("%v with versions read back as %v", k, withVersions)
		}
	}
	if k := KeyOf("Chrome ", "", "no", ""); k.UA != "Chrome " {
		t.Errorf("a family ending in a space read as %q", k.UA)
	}
}
