package configrepo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// testRepo is a real git repository built by a test with the git CLI, with
// fixed author and committer dates so that windows and times are exact.
type testRepo struct {
	t   testing.TB
	dir string
	env []string
}

func newTestRepo(t testing.TB) *testRepo {
	t.Helper()
	testenv.Program(t, "git", "apt-get install git")
	dir := t.TempDir()
	home := t.TempDir()
	r := &testRepo{t: t, dir: dir, env: append(os.Environ(),
		"HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+filepath.Join(home, "gitconfig"),
		"GIT_AUTHOR_NAME=Wiki Ops", "GIT_AUTHOR_EMAIL=ops@wiki.test",
		"GIT_COMMITTER_NAME=Wiki Ops", "GIT_COMMITTER_EMAIL=ops@wiki.test")}
	r.git("init", "-q", "-b", "main")
	return r
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

// write sets files (content "" deletes the file) without committing.
func (r *testRepo) write(files map[string]string) {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		if content == "" {
			if err := os.Remove(p); err != nil {
				r.t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

// commit writes files, stages everything and commits at when; it returns the hash.
func (r *testRepo) commit(when time.Time, msg string, files map[string]string) string {
	r.t.Helper()
	r.write(files)
	r.git("add", "-A")
	r.gitAt(when, "commit", "-q", "--allow-empty", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

func (r *testRepo) mkdir(dirs ...string) {
	r.t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(r.dir, filepath.FromSlash(d)), 0o755); err != nil {
			r.t.Fatal(err)
		}
	}
}
