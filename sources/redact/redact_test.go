package redact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestError(t *testing.T) {
	secrets := Secrets("ops", "hunter2", "tok-123", "header-value")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"password", errors.New("bad: hunter2"), "bad: REDACTED"},
		{"echoed basic auth", errors.New("proxy said Authorization: Basic b3BzOmh1bnRlcjI="), "proxy said Authorization: Basic REDACTED"},
		{"token and header", errors.New("Bearer tok-123 X-Key: header-value"), "Bearer REDACTED X-Key: REDACTED"},
		{"clean", errors.New("connection refused"), "connection refused"},
	}
	for _, tt := range tests {
		if got := Error(tt.err, secrets).Error(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	wrapped := Error(fmt.Errorf("query hunter2: %w", context.Canceled), secrets)
	if !errors.Is(wrapped, context.Canceled) || strings.Contains(wrapped.Error(), "hunter2") {
		t.Errorf("wrapped = %v", wrapped)
	}
	if errors.Unwrap(wrapped) != nil {
		t.Errorf("Unwrap would expose the raw text")
	}
	if Error(nil, secrets) != nil {
		t.Error("nil error became non-nil")
	}
}

func TestSecrets(t *testing.T) {
	got := Secrets("ops", "pw", " tok-123\n", "abc", "", "header-value")
	want := []string{"header-value", "b3BzOnB3", "tok-123"} // "pw" and "abc" are too short
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Secrets = %q, want %q", got, want)
	}
	// Longest first: a secret holding another is replaced whole.
	secrets := Secrets("", "", "", "abcd", "abcdefgh")
	if got := String("key abcdefgh and abcd", secrets); got != "key REDACTED and REDACTED" {
		t.Errorf("String = %q", got)
	}
	if got := String("nothing here", secrets); got != "nothing here" {
		t.Errorf("String changed clean text: %q", got)
	}
}
