package layoutcheck

import (
	"os/exec"
	"testing"
)

// A Chromium that a signal killed is run once more; one that exited with a
// status, or was killed at the deadline, gave its answer.
func TestCrashed(t *testing.T) {
	for _, tt := range []struct {
		script string
		want   bool
	}{
		{"kill -SEGV $$", true},
		{"kill -ABRT $$", true},
		{"kill -KILL $$", false},
		{"exit 1", false},
		{"exit 0", false},
	} {
		err := exec.Command("sh", "-c", tt.script).Run()
		if got := crashed(err); got != tt.want {
			t.Errorf("%q: crashed %t (err %v), want %t", tt.script, got, err, tt.want)
		}
	}
}
