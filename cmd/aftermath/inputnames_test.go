package main

import (
	"os"
	"strings"
	"testing"
)

// TestMessagesNameTheUsersInput: a note about an input that only existed
// in a temporary file (a live analysis' bundle, a copy of standard input)
// names what the user gave, never a path that is gone when they read it.
func TestMessagesNameTheUsersInput(t *testing.T) {
	t.Run("an empty Loki log of a live analysis", func(t *testing.T) {
		config, _, _, from, to := liveFakes(t)
		b, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		doc := strings.Replace(string(b), "prometheus:\n", "  logs:\n    - name: php-fpm\n      selector: '{job=\"php-fpm\"}'\nprometheus:\n", 1)
		if err := os.WriteFile(config, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		a, _ := analyzeLive(t, config, from, to)
		found := false
		for _, n := range a.Report.DataQuality {
			if strings.Contains(n.Message, os.TempDir()) || strings.Contains(n.Message, "aftermath-live-") {
				t.Errorf("a note names the temporary bundle: %s", n.Message)
			}
			found = found || strings.Contains(n.Message, `loki {job="php-fpm"} is empty`)
		}
		if !found {
			t.Errorf("no note says the php-fpm log from Loki is empty: %+v", a.Report.DataQuality)
		}
	})
	t.Run("empty standard input", func(t *testing.T) {
		code, msg := runCLI([]string{"analyze", "--access", "-", "--out", t.TempDir()}, nil)
		if code != exitUsage || !strings.Contains(msg, "the access logs (standard input) are empty") || strings.Contains(msg, "aftermath-stdin-") {
			t.Errorf("exit %d: %s", code, msg)
		}
	})
}
