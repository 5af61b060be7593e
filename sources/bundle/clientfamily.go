package bundle

import (
	"regexp"
	"strconv"
	"strings"
)

// A client family is what Loki can tell of a request's client without
// sending its lines, as a pushed-down fetch counts it inside Loki
// (ClientFamilyTemplate, in label_format) and the detectors name it
// (ClientFamily): a coarse agent and the first two letters of the primary
// Accept-Language tag. Both are computed from the one definition below, so
// that a family pulled whole (a bundle's Pushdown.Families) holds every line
// of the clients the detectors put in it.

// familyAgents are the coarse agents, the first whose token the User-Agent
// holds (fold: whatever its case); "other" when none does.
var familyAgents = []struct {
	token, name string
	fold        bool
}{
	{"bot", "bot", true},
	{"Firefox/", "firefox", false},
	{"Chrome/", "chrome", false},
	{"Safari/", "safari", false},
}

const otherAgent = "other"

// familyLangPattern takes the primary tag of an Accept-Language header as the
// access-log reader keeps it (the first range, blanks around it trimmed, only
// letters, digits, '-' and '_', at most 35 bytes) and nothing from anything
// else ("*", a malformed or overlong range): replacing the whole value with
// ${1} leaves the tag or "". A primary tag already cut is left as it is, so
// the header and the tag the reader kept give one family. Two letters of the
// raw header would not: "zh.CN" and "*" are no tag to the reader, and ",en"
// begins with a comma. Its [[:blank:]] is a space or a tab, as the reader
// trims; (?s) lets the rest of a header hold any byte.
const familyLangPattern = `(?s)^(?:[[:blank:]]*([A-Za-z0-9_-]{1,35})[[:blank:]]*(?:[,;].*)?|.*)$`

var familyLang = regexp.MustCompile(familyLangPattern)

// familyLangLen is how much of the primary tag a family keeps: "zh-cn",
// "zh-tw" and "zh" are one family; with a site's few dozen families, Loki's
// max_query_series stays far away.
const familyLangLen = 2

// ClientFamily is a request's client family (agent/language, "chrome/zh"):
// userAgent is its User-Agent, lang its Accept-Language header or the
// primary tag the access-log reader kept of it (the two give one family).
func ClientFamily(userAgent, lang string) string {
	agent := otherAgent
	for _, a := range familyAgents {
		ua := userAgent
		if a.fold {
			ua = strings.ToLower(ua)
		}
		if strings.Contains(ua, a.token) {
			agent = a.name
			break
		}
	}
	l := strings.ToLower(familyLang.ReplaceAllString(lang, "${1}"))
	if len(l) > familyLangLen {
		l = l[:familyLangLen]
	}
	return agent + "/" + l
}

// ClientFamilyAgent is the token a User-Agent holds in the agent named
// name (a family's part before the slash) and whether its case is folded;
// ok is false for the agent of no token ("other").
func ClientFamilyAgent(name string) (token string, fold, ok bool) {
	for _, a := range familyAgents {
		if a.name == name {
			return a.token, a.fold, true
		}
	}
	return "", false, false
}

// ClientFamilyTemplate is ClientFamily as a template of Loki's label_format
// (text/template with Loki's functions: contains takes the substring first,
// regexReplaceAll the expression, the text and the replacement), reading
// the User-Agent from label uaLabel and the Accept-Language header from
// langLabel.
func ClientFamilyTemplate(uaLabel, langLabel string) string {
	var b strings.Builder
	for i, a := range familyAgents {
		ua := "." + uaLabel
		if a.fold {
			ua = "(lower ." + uaLabel + ")"
		}
		if i > 0 {
			b.WriteString("{{ else if ")
		} else {
			b.WriteString("{{ if ")
		}
		b.WriteString(`contains "` + a.token + `" ` + ua + " }}" + a.name)
	}
	b.WriteString("{{ else }}" + otherAgent + "{{ end }}/")
	b.WriteString(`{{ regexReplaceAll "` + familyLangPattern + `" .` + langLabel + ` "${1}" | lower | trunc ` + strconv.Itoa(familyLangLen) + " }}")
	return b.String()
}
