package rules

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Handler-wide settings the printer emits.
const (
	// jitter adds up to 20% to each refused client's Retry-After, so readers
	// refused together do not all come back in the same second.
	jitter = 0.2
)

// Caddyfile prints zones as one rate_limit block for a site block, formatted
// as `caddy fmt` formats it. It emits only subdirectives that caddy-ratelimit
// v0.1.0 parses (zone, match, key, window, events, log_key, jitter): v0.1.0
// silently ignores anything else, e.g. ipv4_prefix.
//
// The block relies on the directive order v0.1.0 registers for itself
// (rate_limit before basic_auth), so it needs no global option. Caddy orders
// rewrite, uri and try_files before it, though: a site that rewrites /w/* at
// its top level hands the zone the rewritten path. Such a site should put the
// block first in a route, or set `order rate_limit first` in its global options.
func Caddyfile(zones []Zone) (string, error) {
	if len(zones) == 0 {
		return "", errors.New("caddyfile: no zone to print")
	}
	var b strings.Builder
	b.WriteString("rate_limit {\n")
	for i := range zones {
		if err := printZone(&b, &zones[i]); err != nil {
			return "", fmt.Errorf("caddyfile: zone %d: %w", i+1, err)
		}
	}
	b.WriteString("log_key\n")
	b.WriteString("jitter " + strconv.FormatFloat(jitter, 'f', -1, 64) + "\n")
	b.WriteString("}\n")
	return string(caddyfile.Format([]byte(b.String()))), nil
}

func printZone(b *strings.Builder, z *Zone) error {
	if !zoneNameOK(z.Name) {
		return fmt.Errorf("zone name %q is not 1-64 of [a-z0-9_]", z.Name)
	}
	if z.Events <= 0 || z.Window <= 0 {
		return fmt.Errorf("zone %s: window %v and events %d must be positive", z.Name, z.Window, z.Events)
	}
	if len(z.Targets) == 0 {
		return fmt.Errorf("zone %s has nothing to match", z.Name)
	}
	fmt.Fprintf(b, "zone %s {\n", z.Name)
	for _, t := range z.Targets {
		b.WriteString("match {\n")
		if err := printTarget(b, t); err != nil {
			return fmt.Errorf("zone %s: %w", z.Name, err)
		}
		if err := printConditions(b, z.Cond); err != nil {
			return fmt.Errorf("zone %s: %w", z.Name, err)
		}
		b.WriteString("}\n")
	}
	// The key is trusted text: the zone's name or a placeholder of ours.
	fmt.Fprintf(b, "key %s\n", z.Key())
	fmt.Fprintf(b, "window %s\n", CaddyDuration(z.Window))
	fmt.Fprintf(b, "events %d\n", z.Events)
	b.WriteString("}\n")
	return nil
}

func printTarget(b *strings.Builder, t Target) error {
	var line []string
	switch {
	case len(t.Paths) > 0:
		line = append(line, "path")
		for _, p := range t.Paths {
			line = append(line, p)
		}
	case t.QueryKey != "" && t.ValueRegexp != "":
		// The key is a safe query key (routeTarget) inside a placeholder
		// of ours; only the regular expression is quoted.
		if !safeQueryKey(t.QueryKey) {
			return fmt.Errorf("query key %q is not safe in a placeholder", t.QueryKey)
		}
		q, err := quoteRegexp(t.ValueRegexp)
		if err != nil {
			return err
		}
		b.WriteString("vars_regexp " + queryValueVar(t.QueryKey) + " " + q + "\n")
		return nil
	case t.QueryKey != "":
		line = append(line, "query")
		for _, v := range t.QueryValues {
			line = append(line, t.QueryKey+"="+v)
		}
	case len(t.TitleNames) > 0:
		// The placeholder is ours; only the regular expression is quoted.
		q, err := quoteRegexp(titleRegexp(t.TitleNames))
		if err != nil {
			return err
		}
		b.WriteString("vars_regexp " + titleVar + " " + q + "\n")
		return nil
	default:
		return errors.New("empty match target")
	}
	return writeLine(b, line)
}

func printConditions(b *strings.Builder, c Conditions) error {
	if c.Method != "" {
		// A constant of detect's (never a log value), checked all the same.
		if err := writeLine(b, []string{"method", c.Method}); err != nil {
			return err
		}
	}
	if c.NotCookie != "" {
		if err := writeLine(b, []string{"not", "header", "Cookie", "*" + c.NotCookie + "*"}); err != nil {
			return err
		}
	}
	if c.NotCookieRegexp != "" {
		q, err := quoteRegexp(c.NotCookieRegexp)
		if err != nil {
			return err
		}
		b.WriteString("not header_regexp Cookie " + q + "\n")
	}
	if c.NoCookie {
		b.WriteString("header !Cookie\n")
	}
	if c.NoSiteReferer {
		// One `not` line per pattern (a header matcher line takes one
		// value): Caddy gathers the lines into one not matcher whose sets
		// are ORed, so the request must meet none. The patterns are
		// constants whose placeholder is meant (writeLine refuses braces,
		// which in a log-derived token would be an injection).
		for _, p := range siteRefererPatterns {
			b.WriteString("not header Referer " + p + "\n")
		}
	}
	if c.Lang != "" {
		q, err := quoteRegexp(langRegexp(c.Lang))
		if err != nil {
			return err
		}
		b.WriteString("header_regexp Accept-Language " + q + "\n")
	}
	if c.AnyLang {
		b.WriteString("header Accept-Language *\n")
	}
	if c.NoClientHints {
		b.WriteString("header !Sec-Ch-Ua\n")
	}
	switch {
	case c.UserAgent != "" && len(c.UserAgentVersions) > 0:
		q, err := quoteRegexp(uaVersionRegexp(c.UserAgent, c.UserAgentVersions))
		if err != nil {
			return err
		}
		b.WriteString("header_regexp User-Agent " + q + "\n")
	case c.UserAgent != "":
		if err := writeLine(b, []string{"header", "User-Agent", "*" + c.UserAgent + "*"}); err != nil {
			return err
		}
	}
	return nil
}

// writeLine writes one Caddyfile line, every token quoted as needed.
func writeLine(b *strings.Builder, tokens []string) error {
	for i, t := range tokens {
		q, err := quote(t)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(q)
	}
	b.WriteByte('\n')
	return nil
}

func zoneNameOK(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// quote renders s as one Caddyfile token that the lexer reads back as exactly
// s. It refuses what no quoting makes inert: invalid UTF-8, control characters
// (a newline would start a new directive) and braces (Caddy expands {$ENV}
// while parsing and {placeholders} at request time, quoted or not).
//
// Plain text stays bare. Anything the lexer treats specially (blanks, quotes,
// backslashes, a leading '#' or "<<") goes in backticks, inside which the lexer
// reads every character literally until the next backtick; text that itself
// holds a backtick goes in double quotes, where only \" is an escape.
func quote(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty token")
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("token %q is not valid UTF-8", s)
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) {
			return "", fmt.Errorf("token %q holds a control character", s)
		}
		if r == '{' || r == '}' {
			return "", fmt.Errorf("token %q holds a brace (placeholder or {$ENV} expansion)", s)
		}
	}
	bare := !strings.HasPrefix(s, "#") && !strings.HasPrefix(s, "<<") &&
		!strings.ContainsAny(s, "\"`\\") && !strings.ContainsFunc(s, unicode.IsSpace)
	switch {
	case bare:
		return s, nil
	case !strings.Contains(s, "`"):
		return "`" + s + "`", nil
	case !strings.Contains(s, `\`):
		return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`, nil
	}
	return "", fmt.Errorf("token %q holds both a backtick and a backslash", s)
}

// quoteRegexp quotes a regular expression as one Caddyfile token, always in
// backticks (or double quotes when it holds a backtick). Braces, which quote
// refuses, are allowed where they are RE2's own and nothing Caddy expands: a
// repetition count ("{32}", "{8,12}") and a Unicode class name ("\p{Han}").
// Caddy's Caddyfile parser expands only "{$" (environment variables) and
// its shorthands are names ({path}, {query.s}), never a number or a class;
// the regexp matchers compile the pattern as it stands; and validate checks
// that the adapted pattern is the model's, character for character.
func quoteRegexp(s string) (string, error) {
	masked := regexpBraces.ReplaceAllStringFunc(s, func(m string) string {
		return strings.NewReplacer("{", "(", "}", ")").Replace(m)
	})
	q, err := quote(masked)
	switch {
	case err != nil:
		return q, err
	case strings.HasPrefix(q, `"`):
		return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`, nil
	}
	return "`" + s + "`", nil
}

// regexpBraces are the brace groups of RE2 that quoteRegexp lets through.
var regexpBraces = regexp.MustCompile(`\{[0-9]+(?:,[0-9]*)?\}|\\p\{[A-Za-z_]+\}`)

// CaddyDuration writes a window the way Caddy's duration parser reads it: in
// its largest whole unit, else as Go writes it (1.5s), which Caddy reads too.
func CaddyDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}
