package configrepo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/changes"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

var kst = time.FixedZone("KST", 9*3600)

// incident is the reference incident's onset; the lookback window is the 72 h before it.
var incident = time.Date(2026, 10, 3, 2, 26, 0, 0, kst)

func hoursBefore(h float64) time.Time {
	return incident.Add(-time.Duration(h * float64(time.Hour)))
}

const poolV1 = `; php-fpm pool serving the wiki
[www]
user = www-data
listen = 127.0.0.1:9000
; Size of the kernel accept queue
listen.backlog = 511
pm = static
pm.max_children = 16
pm.max_requests = 0
request_terminate_timeout = 30s
`

const caddyV1 = `{
	admin off
}

wiki.example.org {
	import snippets/fastcgi.caddy
}
`

const fastcgiV1 = `php_fastcgi 127.0.0.1:9000 {
	read_timeout 10s
	health_uri /healthz.php
	health_timeout 10s
}
`

// historyRepo builds the repository most FromGit tests read: every kind of
// history event, each at a known time. It returns the repo and the hashes.
func historyRepo(t *testing.T) (*testRepo, map[string]string) {
	r := newTestRepo(t)
	h := map[string]string{}
	h["initial"] = r.commit(hoursBefore(80), "Initial configuration", map[string]string{
		"www.conf":               poolV1,
		"old-pool.conf":          "[legacy]\nlisten = /run/legacy.sock\nlisten.backlog = 128\npm = ondemand\n",
		"php.ini":                "[PHP]\nmemory_limit = 128M\nmax_execution_time = 30\n",
		"Caddyfile":              caddyV1,
		"snippets/fastcgi.caddy": fastcgiV1,
		"docker/Dockerfile":      "ARG PHP_TAG=8.2-fpm\nFROM php:${PHP_TAG} AS base\nRUN docker-php-ext-install opcache\nFROM base\nCOPY www.conf /usr/local/etc/php-fpm.d/www.conf\n",
		".env":                   "PHP_FPM_PM_MAX_CHILDREN=16\nAPP_ENV=prod\n",
		"secrets.env":            "DB_PASSWORD=hunter2\n",
		"infra/prod.tfvars":      "php_fpm_listen_backlog = 511\ninstance_type = \"t3.large\"\n",
		"README.md":              "# wiki config\n",
		"skins/site.css":         "body { color: black; }\n",
	})
	h["docs"] = r.commit(hoursBefore(60), "Docs and a colour", map[string]string{
		"README.md":      "# wiki config\n\nHow to deploy.\n",
		"skins/site.css": "body { color: #222; }\n",
	})
	// A rename with a change, and a rename without one.
	r.mkdir("pool.d", "conf")
	r.git("mv", "www.conf", "pool.d/www.conf")
	r.git("mv", "php.ini", "conf/php.ini")
	h["rename"] = r.commit(hoursBefore(50), "Move pool files", map[string]string{
		"pool.d/www.conf": strings.Replace(poolV1, "pm.max_requests = 0", "pm.max_requests = 500", 1),
	})
	h["delete"] = r.commit(hoursBefore(40), "Drop the legacy pool", map[string]string{"old-pool.conf": ""})

	// A branch with two commits, merged with --no-ff while main moved on.
	r.git("checkout", "-q", "-b", "php83")
	h["branch1"] = r.commit(hoursBefore(30), "Fewer workers, bigger queue", map[string]string{
		".env":              "PHP_FPM_PM_MAX_CHILDREN=12\nAPP_ENV=prod\n",
		"infra/prod.tfvars": "php_fpm_listen_backlog = 1024\ninstance_type = \"t3.large\"\n",
	})
	h["branch2"] = r.commit(hoursBefore(29), "PHP 8.3 image", map[string]string{
		"docker/Dockerfile": "ARG PHP_TAG=8.3-fpm\nFROM php:${PHP_TAG} AS base\nRUN docker-php-ext-install opcache\nFROM base\nCOPY www.conf /usr/local/etc/php-fpm.d/www.conf\n",
	})
	r.git("checkout", "-q", "main")
	h["rotate"] = r.commit(hoursBefore(28), "Rotate the database password", map[string]string{
		"secrets.env": "DB_PASSWORD=correct-horse\n",
	})
	r.gitAt(hoursBefore(20), "merge", "-q", "--no-ff", "-m", "Merge branch 'php83'", "php83")
	h["merge"] = r.git("rev-parse", "HEAD")

	// A huge unrelated commit: 2,000 generated binary assets.
	huge := map[string]string{}
	for i := 0; i < 2000; i++ {
		huge[fmt.Sprintf("assets/gen/%02d/icon-%04d.png", i%20, i)] = fmt.Sprintf("\x89PNG\r\n\x1a\n\x00\x00%04d", i)
	}
	h["huge"] = r.commit(hoursBefore(10), "Regenerate icons", huge)

	// The enabler: the backlog raised, and the health timeout (in an imported
	// snippet) lowered.
	h["enabler"] = r.commit(hoursBefore(2.6), "Bump PHP to 8.3\n\nThe new template raises listen.backlog.", map[string]string{
		"pool.d/www.conf":        strings.NewReplacer("pm.max_requests = 0", "pm.max_requests = 500", "listen.backlog = 511", "listen.backlog = 4096").Replace(poolV1),
		"snippets/fastcgi.caddy": strings.Replace(fastcgiV1, "health_timeout 10s", "health_timeout 5s", 1),
	})
	// After the window.
	h["after"] = r.commit(incident.Add(5*time.Hour), "Cap the queue", map[string]string{
		"pool.d/www.conf": strings.NewReplacer("pm.max_requests = 0", "pm.max_requests = 500", "listen.backlog = 511", "listen.backlog = 64").Replace(poolV1),
	})
	return r, h
}

type wantChange struct {
	commit, file, key, old, new string
}

func TestFromGitHistory(t *testing.T) {
	r, h := historyRepo(t)
	got, notes, err := FromGit(context.Background(), r.dir, incident.Add(-72*time.Hour), incident)
	if err != nil {
		t.Fatal(err)
	}
	find := func(w wantChange) *sources.Change {
		for i := range got {
			c := &got[i]
			if c.Ref == h[w.commit] && c.File == w.file && c.Key == w.key {
				return c
			}
		}
		return nil
	}
	wants := []struct {
		name string
		want wantChange
	}{
		{"unknown format is a file-level change", wantChange{"docs", "README.md", "", "", ""}},
		{"stylesheet is a file-level change", wantChange{"docs", "skins/site.css", "", "", ""}},
		{"rename with an edit diffs old path against new", wantChange{"rename", "pool.d/www.conf", "pm.max_requests", "0", "500"}},
		{"rename without an edit is a file-level change", wantChange{"rename", "conf/php.ini", "", "renamed from php.ini", "renamed to conf/php.ini"}},
		{"deleted pool file removes its keys", wantChange{"delete", "old-pool.conf", "listen.backlog", "128", ""}},
		{"deleted pool file removes pm", wantChange{"delete", "old-pool.conf", "pm", "ondemand", ""}},
		{"env knob maps to the pool key (via the merge)", wantChange{"merge", ".env", "pm.max_children", "16", "12"}},
		{"tfvars knob maps to the pool key (via the merge)", wantChange{"merge", "infra/prod.tfvars", "listen.backlog", "511", "1024"}},
		{"Dockerfile PHP version (via the merge)", wantChange{"merge", "docker/Dockerfile", "php_version", "8.2", "8.3"}},
		{"Dockerfile base image follows the stage alias", wantChange{"merge", "docker/Dockerfile", "base_image", "php:8.2-fpm", "php:8.3-fpm"}},
		{"password rotation is visible but redacted", wantChange{"rotate", "secrets.env", "env.DB_PASSWORD", Redacted, Redacted}},
		{"huge commit is one summarised change", wantChange{"huge", "assets/gen/", "", "", "2000 files changed"}},
		{"the enabler", wantChange{"enabler", "pool.d/www.conf", "listen.backlog", "511", "4096"}},
		{"a change in an imported Caddy snippet", wantChange{"enabler", "snippets/fastcgi.caddy", "php_fastcgi.health_timeout", "10s", "5s"}},
	}
	for _, tt := range wants {
		t.Run(tt.name, func(t *testing.T) {
			c := find(tt.want)
			if c == nil {
				t.Fatalf("no change %+v among:\n%s", tt.want, dump(got))
			}
			if c.Old != tt.want.old || c.New != tt.want.new {
				t.Errorf("%s: %q -> %q, want %q -> %q", c.Key, c.Old, c.New, tt.want.old, tt.want.new)
			}
			if c.Source != changes.SourceGit || c.Author != "Wiki Ops <ops@wiki.test>" || c.Note == "" {
				t.Errorf("source %q author %q note %q: want git, the author and the message", c.Source, c.Author, c.Note)
			}
		})
	}

	t.Run("outside the window", func(t *testing.T) {
		for _, c := range got {
			if c.Ref == h["initial"] || c.Ref == h["after"] {
				t.Errorf("change from a commit outside the window: %+v", c)
			}
		}
	})
	t.Run("merge counted once, at the merge", func(t *testing.T) {
		n := 0
		for _, c := range got {
			if c.Ref == h["branch1"] || c.Ref == h["branch2"] {
				t.Errorf("branch commit listed on its own (duplicate of the merge): %+v", c)
			}
			if c.Key == "pm.max_children" {
				n++
				if !c.Time.Equal(hoursBefore(20)) {
					t.Errorf("merged change time %v, want the merge's committer date %v", c.Time, hoursBefore(20))
				}
				if !strings.Contains(c.Note, "PHP 8.3 image") || !strings.Contains(c.Note, "Merge branch") {
					t.Errorf("merge note %q lacks the merged subjects", c.Note)
				}
			}
		}
		if n != 1 {
			t.Errorf("pm.max_children changed %d times, want once", n)
		}
	})
	t.Run("huge commit stays one change", func(t *testing.T) {
		n := 0
		for _, c := range got {
			if c.Ref == h["huge"] {
				n++
			}
		}
		if n != 1 {
			t.Errorf("huge commit gave %d changes, want 1", n)
		}
		if !hasNote(notes, "2000 files") {
			t.Errorf("no quality note about the summarised files: %v", notes)
		}
	})
	t.Run("times are committer dates, sorted", func(t *testing.T) {
		for i, c := range got {
			if i > 0 && c.Time.Before(got[i-1].Time) {
				t.Errorf("not sorted at %d", i)
			}
			if c.Ref == h["enabler"] && !c.Time.Equal(hoursBefore(2.6)) {
				t.Errorf("enabler time %v, want %v", c.Time, hoursBefore(2.6))
			}
		}
	})
	t.Run("secrets never leave the repository", func(t *testing.T) {
		for _, c := range got {
			if strings.Contains(c.Old+c.New, "hunter2") || strings.Contains(c.Old+c.New, "correct-horse") {
				t.Errorf("secret value in %+v", c)
			}
		}
	})
}

func TestFromGitNoRelevantChange(t *testing.T) {
	r := newTestRepo(t)
	r.commit(hoursBefore(30), "Readme", map[string]string{"README.md": "hello\n"})
	r.commit(hoursBefore(3), "Colours", map[string]string{"skins/site.css": "a { color: red }\n", "README.md": "hello again\n"})
	got, _, err := FromGit(context.Background(), r.dir, incident.Add(-72*time.Hour), incident)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("got %d changes, want 3 file-level ones:\n%s", len(got), dump(got))
	}
	for _, c := range got {
		if c.Key != "" {
			t.Errorf("a setting from a repository without configuration: %+v", c)
		}
	}
}

func TestFromGitErrors(t *testing.T) {
	if _, _, err := FromGit(context.Background(), t.TempDir(), time.Time{}, time.Time{}); err == nil || !strings.Contains(err.Error(), "not a git repository") {
		t.Errorf("err = %v, want it to say the directory is not a repository", err)
	}
	r := newTestRepo(t)
	got, notes, err := FromGit(context.Background(), r.dir, time.Time{}, time.Time{})
	if err != nil || len(got) != 0 || !hasNote(notes, "no commits") {
		t.Errorf("empty repository: %v %v %v, want no changes and a note", got, notes, err)
	}
}

func TestFromGitBrokenCaddyfile(t *testing.T) {
	r := newTestRepo(t)
	r.commit(hoursBefore(30), "Site", map[string]string{"Caddyfile": "example.org {\n\tphp_fastcgi 127.0.0.1:9000\n}\n"})
	h := r.commit(hoursBefore(3), "Typo", map[string]string{"Caddyfile": "example.org {\n\tphp_fastcgi 127.0.0.1:9000\n\t{\n\t}\n}\n"})
	got, notes, err := FromGit(context.Background(), r.dir, incident.Add(-72*time.Hour), incident)
	if err != nil {
		t.Fatal(err)
	}
	var fileLevel bool
	for _, c := range got {
		if c.Ref == h && c.File == "Caddyfile" && c.Key == "" {
			fileLevel = true
		}
	}
	if !fileLevel || !hasNote(notes, short(h)) {
		t.Errorf("broken Caddyfile: want a file-level change and a note naming the commit; got\n%s\nnotes %v", dump(got), notes)
	}
}

// TestFromGitLab reads the configuration repository of the real lab recording.
func TestFromGitLab(t *testing.T) {
	dir := extractLabRepo(t)
	const truth = "9d78ccbea301e57b510ff3f93c1312f5e6a9a843"
	deploy := time.Date(2026, 11, 29, 19, 20, 10, 0, kst)
	onset := time.Date(2026, 11, 29, 15, 37, 10, 0, time.UTC)
	got, notes, err := FromGit(context.Background(), dir, onset.Add(-72*time.Hour), onset)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 0 {
		t.Errorf("notes: %v", notes)
	}
	if len(got) != 1 {
		t.Fatalf("got %d changes in the 72 h before the onset, want 1:\n%s", len(got), dump(got))
	}
	c := got[0]
	if c.Ref != truth || c.Key != "listen.backlog" || c.Old != "511" || c.New != "4096" || c.File != "www.conf" {
		t.Errorf("got %+v, want listen.backlog 511 -> 4096 in www.conf at %s", c, truth)
	}
	if !c.Time.Equal(deploy) || !strings.HasPrefix(c.Note, "Bump PHP to 8.3") || c.Author != "Wiki Ops <ops@wiki.lab.test>" {
		t.Errorf("time %v note %q author %q", c.Time, c.Note, c.Author)
	}

	all, _, err := FromGit(context.Background(), dir, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, c := range all {
		keys[c.Key] = c.New
	}
	for k, v := range map[string]string{
		"php_fastcgi.read_timeout": "10s", "php_fastcgi.health_timeout": "10s", "php_fastcgi.health_fails": "3",
		"php_fastcgi.health_uri": "/healthz.php", "pm.max_children": "4", "pm.status_listen": "127.0.0.1:9001",
		"reverse_proxy.transport": "fastcgi",
	} {
		if keys[k] != v {
			t.Errorf("whole history: %s = %q, want %q", k, keys[k], v)
		}
	}
}

// extractLabRepo unpacks the lab recording's config.tar.gz into a temporary
// directory and returns its repository (the test ends as testenv.Missing says
// when the shared data is absent).
func extractLabRepo(t *testing.T) string {
	t.Helper()
	repos, err := bundle.UnpackConfigArchives([]string{testenv.LabIncident(t, "changes/config.tar.gz")}, t.TempDir())
	if err != nil || len(repos) != 1 {
		t.Fatalf("the lab's config.tar.gz: repositories %v, %v", repos, err)
	}
	return repos[0]
}

// BenchmarkFromGitHugeCommit measures a window whose one commit adds 2,000
// unrelated files: none of them may be read.
func BenchmarkFromGitHugeCommit(b *testing.B) {
	r := newTestRepo(b)
	r.commit(hoursBefore(30), "Pool", map[string]string{"www.conf": poolV1})
	huge := map[string]string{}
	for i := 0; i < 2000; i++ {
		huge[fmt.Sprintf("assets/gen/%02d/icon-%04d.png", i%20, i)] = fmt.Sprintf("\x89PNG\r\n\x1a\n\x00\x00%04d", i)
	}
	r.commit(hoursBefore(10), "Regenerate icons", huge)
	r.commit(hoursBefore(2), "Backlog", map[string]string{"www.conf": strings.Replace(poolV1, "= 511", "= 4096", 1)})
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := FromGit(context.Background(), r.dir, incident.Add(-72*time.Hour), incident); err != nil {
			b.Fatal(err)
		}
	}
}

func hasNote(notes []sources.QualityNote, s string) bool {
	for _, n := range notes {
		if strings.Contains(n.Message, s) {
			return true
		}
	}
	return false
}

func dump(cs []sources.Change) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "  %s %s %s %q: %q -> %q\n", c.Time.Format(time.RFC3339), short(c.Ref), c.File, c.Key, c.Old, c.New)
	}
	return b.String()
}

// TestFilesAfterIsLsTree: the file list FromGit derives for each commit from
// its parent's and its deltas (filesAfter, chained from the root commit) is
// ls-tree's, path for path and in its order, through renames, a deletion,
// a merge, 2,000 added files, a directory replaced by a file and names
// whose order is not the order of their directories' names.
func TestFilesAfterIsLsTree(t *testing.T) {
	r, _ := historyRepo(t)
	r.commit(incident.Add(6*time.Hour), "Names that sort across directories", map[string]string{
		"foo.c": "1\n", "foo/bar": "2\n", "foo-bar": "3\n", "Foo": "4\n", "ü.conf": "5\n", "skins/x/y.css": "6\n",
	})
	r.git("rm", "-q", "-r", "skins")
	r.commit(incident.Add(7*time.Hour), "A directory becomes a file", map[string]string{"skins": "gone\n"})

	g := &gitRepo{dir: r.dir, lsCache: map[string][]string{}, caddyCache: map[string]caddyResult{}}
	ctx := context.Background()
	cs, err := g.commits(ctx, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.readDeltas(ctx, cs); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, c := range cs {
		files = g.filesAfter(c, files)
		want := strings.Split(strings.TrimSuffix(r.git("-c", "core.quotepath=off", "ls-tree", "-r", "-z", "--name-only", c.hash), "\x00"), "\x00")
		if !slices.Equal(files, want) {
			t.Fatalf("commit %s %q: derived %d files %q\nls-tree lists %d %q", short(c.hash), c.message, len(files), files[:min(len(files), 12)],
				len(want), want[:min(len(want), 12)])
		}
	}
	if len(cs) != 11 {
		t.Errorf("%d commits walked, want the history's 11", len(cs))
	}
}
