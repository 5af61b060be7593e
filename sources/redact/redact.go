// Package redact keeps credentials out of error texts. Secrets travel only in
// request headers, which Go never prints; this is the second line of defence,
// for a server or proxy that echoes a header back into its error body.
package redact

import (
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
)

// Mark replaces a secret in text.
const Mark = "REDACTED"

// Secrets lists what must never be printed for one set of credentials: the
// password, the token, the encoded basic-auth credential and any extra values
// (e.g. custom header values). Empty strings are left out.
func Secrets(username, password, token string, extra ...string) []string {
	var out []string
	for _, s := range append([]string{password, token}, extra...) {
		if s != "" {
			out = append(out, s)
		}
	}
	if password != "" {
		out = append(out, base64.StdEncoding.EncodeToString([]byte(username+":"+password)))
	}
	return out
}

// Error returns err with every secret replaced by Mark. errors.Is still sees
// through it (context.Canceled, ...); Unwrap does not, so the raw text cannot
// leak through a wrapper.
func Error(err error, secrets []string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for _, s := range secrets {
		clean = strings.ReplaceAll(clean, s, Mark)
	}
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
