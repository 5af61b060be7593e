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
