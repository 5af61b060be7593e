package main

import (
	"strings"
	"testing"
)

// TestReplaySafety: replay refuses to load a target off loopback unless the
// user says it is theirs, and refuses nonsense before reading anything.
func TestReplaySafety(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--bundle", "x", "--target", "http://staging.example.org"}, "not on loopback"},
		{[]string{"replay", "--bundle", "x", "--target", "http://10.0.0.8:8080"}, "not on loopback"},
		{[]string{"replay", "--bundle", "x", "--target", "http://127.0.0.1:8080", "--only", "readers"}, "--only"},
		{[]string{"replay", "--bundle", "x", "--target", "ftp://127.0.0.1"}, "--target"},
		{[]string{"replay", "--target", "http://127.0.0.1:8080"}, "--bundle"},
		{[]string{"replay", "--bundle", "x", "--target", "http://127.0.0.1:8080", "--speed", "0"}, "positive"},
	}
	for _, tc := range cases {
		root := newRootCmd()
		root.SetArgs(tc.args)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error about %s", tc.args, err, tc.want)
			continue
		}
		if ee, ok := err.(*exitError); !ok || ee.code != exitUsage {
			t.Errorf("%v: want a usage error (exit 2), got %v", tc.args, err)
		}
	}
	// --target-is-mine passes the safety check: the next complaint is the missing bundle.
	root := newRootCmd()
	root.SetArgs([]string{"replay", "--bundle", "/nonexistent", "--target", "http://10.0.0.8:8080", "--target-is-mine"})
	if err := root.Execute(); err == nil || strings.Contains(err.Error(), "loopback") {
		t.Errorf("with --target-is-mine: %v", err)
	}
}
