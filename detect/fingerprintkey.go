package detect

import (
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// A fingerprint's key as report.json and scan.json write it, and read back:
// the user-agent family (with its major versions when a finding lists
// them: "Chrome 121/120/119"), the primary language, the login state
// ("yes", "no", "unknown") and sec_ch_ua "absent" for a Chromium agent that
// sent no client hints. The rules read a finding back from report.json by
// KeyOf; were the writing and the reading to differ, a zone would be
// written for a fingerprint no request has.

// absentHints is sec_ch_ua of a Chromium agent without client hints.
const absentHints = "absent"

// FingerprintOf is the fingerprint of key k, as a finding or an anomaly
// states it before adding what it measured (paths, method, members).
func FingerprintOf(k request.ClusterKey) *Fingerprint {
	fp := &Fingerprint{UserAgent: k.UA, AcceptLanguage: k.Lang, LoggedIn: k.LoggedIn.String()}
	if k.NoClientHints {
		fp.SecChUa = absentHints
	}
	return fp
}

// KeyOf is the key a fingerprint of report.json names: FingerprintOf read
// back, the major versions after the family dropped.
func KeyOf(userAgent, lang, loggedIn, secChUa string) request.ClusterKey {
	family, _ := request.SplitFamily(userAgent)
	k := request.ClusterKey{UA: family, Lang: lang, NoClientHints: secChUa == absentHints}
	switch loggedIn {
	case sources.LoggedInNo.String():
		k.LoggedIn = sources.LoggedInNo
	case sources.LoggedInYes.String():
		k.LoggedIn = sources.LoggedInYes
	default:
		k.LoggedIn = sources.LoggedInUnknown
	}
	return k
}
