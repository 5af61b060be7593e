package changes

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// testRepo is a real git repository built by a test with the git CLI, with
// fixed author and committer dates so that windows and times are exact.
type testRepo struct {
	t   testing.TB
	dir string
	env []string
}

func (r *testRepo) git(args ...string) string {
	r.t.Helper()
	return r.gitAt(time.Time{}, args...)
}

func (r *testRepo) gitAt(when time.Time, args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = r.env
	if !when.IsZero() {
		d := when.Format(time.RFC3339)
		cmd.Env = append(append([]string(nil), r.env...), "GIT_AUTHOR_DATE="+d, "GIT_COMMITTER_DATE="+d)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}
