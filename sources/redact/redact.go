// Package redact keeps credentials out of error texts. Secrets travel only in
// request headers, which Go never prints; this is the second line of defence,
// for a server or proxy that echoes a header back into its error body.
package redact

import (
	"encoding/base64"
	"errors"
	"net/url"
	"sort"
	"strings"
)

// Mark replaces a secret in text.
const Mark = "REDACTED"

// minSecret is the length under which a value is not treated as a secret:
// replacing it would mangle ordinary text, and it hides nothing anyway.
const minSecret = 4

// Secrets lists what must never be printed for one set of credentials: the
// password, the token, the encoded basic-auth credential and any extra values
// (e.g. custom header values, or another set's secrets). Values are trimmed of
// surrounding space; empty ones and ones shorter than 4 characters are left
// out. The list is longest first, so that a secret containing another is
// replaced whole.
func Secrets(username, password, token string, extra ...string) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); len(s) >= minSecret {
			out = append(out, s)
		}
	}
	for _, s := range append([]string{password, token}, extra...) {
		add(s)
	}
	if password != "" {
		add(base64.StdEncoding.EncodeToString([]byte(username + ":" + password)))
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// String returns s with every secret replaced by Mark, in the order given
// (Secrets lists them longest first).
func String(s string, secrets []string) string {
	for _, x := range secrets {
		s = strings.ReplaceAll(s, x, Mark)
	}
	return s
}

// Error returns err with every secret replaced by Mark. errors.Is still sees
// through it (context.Canceled, ...); Unwrap does not, so the raw text cannot
// leak through a wrapper.
func Error(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := String(msg, secrets)
	if clean == msg {
		return err
	}
	return &scrubbed{msg: clean, inner: err}
}

type scrubbed struct {
	msg   string
	inner error
}

func (e *scrubbed) Error() string        { return e.msg }
func (e *scrubbed) Is(target error) bool { return errors.Is(e.inner, target) }
func (e *scrubbed) As(target any) bool   { return false }

// Value shows whether a secret is set without showing it: "" or Mark.
func Value(s string) string {
	if s == "" {
		return ""
	}
	return Mark
}

// URL removes the user info of a URL for display. An unparsable address that
// may hold a password shows nothing at all.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.Contains(raw, "@") {
			return Mark
		}
		return raw
	}
	if u.User != nil {
		u.User = url.User(Mark)
	}
	return u.String()
}
