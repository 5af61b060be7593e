package configrepo

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
)

const (
	// maxConfigBytes bounds what is read of one file version: configuration
	// files are small; a bigger "config" is data and is diffed as a file.
	maxConfigBytes = 1 << 20
	// maxFileLevel is how many unparsed files of one commit are listed one by
	// one; beyond it they are summarised as one change (a vendored library, a
	// generated asset tree), so a huge unrelated commit stays one line.
	maxFileLevel = 20
)

// FromGit reads the configuration changes of the git repository at repoDir
// (a work tree or a bare repository) made between since and until (committer
// dates; a zero bound is open). The lookback window is the caller's choice
// (design.md: 72 h before the incident by default).
//
// It walks the first-parent history of HEAD, so that a merged branch counts
// once, as the merge commit that brought it in (diffed against its first
// parent, with the time it landed). For every file a commit changed, the old
// and new versions of known formats are parsed and one change is emitted per
// key whose value differs: php-fpm pool files and php.ini (ini keys such as
// listen.backlog), Caddyfiles (with Caddy's parser, imports followed; a change
// in an imported file re-parses the Caddyfiles that import it), Dockerfiles
// (base_image, php_version), env files and Terraform variables (knob variables
// such as PHP_FPM_LISTEN_BACKLOG map to the pool's key, listen.backlog).
// Renamed files are diffed old path against new path; deleted files report
// each key as removed (New ""). Files of other formats are never read and give
// one file-level change each (Key ""); a known-format file whose parse fails, or
// whose keys did not change (comments, a rename), gives a file-level change too.
// Values of secret-looking keys are replaced by Redacted.
//
// Each change carries the commit hash (Ref), committer date (Time), author and
// full message (Note). Quality notes list what could not be parsed.
func FromGit(ctx context.Context, repoDir string, since, until time.Time) ([]sources.Change, []sources.QualityNote, error) {
	r := &gitRepo{dir: repoDir, lsCache: map[string][]string{}, caddyCache: map[string]caddyResult{}}
	commits, err := r.commits(ctx, since, until)
	if err != nil {
		// git log fails outside a repository and in one without commits
		// alike; rev-parse, run only then, tells them apart: outside one
		// git exits 128 (saying why on stderr), while --verify --quiet
		// exits 1 and says nothing when HEAD names no commit.
		if _, verr := r.run(ctx, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); verr != nil {
			var exit *exec.ExitError
			if !errors.As(verr, &exit) || exit.ExitCode() != 1 {
				return nil, nil, fmt.Errorf("changes: %s is not a git repository: %w", repoDir, verr)
			}
			return nil, []sources.QualityNote{{Source: changes.SourceGit, Severity: sources.SeverityWarning,
				Message: fmt.Sprintf("repository %s has no commits", repoDir)}}, nil
		}
		return nil, nil, err
	}
	if len(commits) == 0 {
		return nil, nil, nil
	}
	if err := r.readDeltas(ctx, commits); err != nil {
		return nil, nil, err
	}
	defer r.closeCat()

	var out []sources.Change
	var notes []sources.QualityNote
	for _, c := range commits {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		cs, ns, err := r.commitChanges(ctx, c)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, cs...)
		notes = append(notes, ns...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, notes, nil
}

type commit struct {
	hash, parent string // parent: first parent, "" for a root commit
	parents      int
	author       string
	time         time.Time
	message      string
	// deltas are what the commit changed against its first parent
	// (readDeltas).
	deltas []fileDelta
}

type caddyResult struct {
	keys    map[string]string
	closure map[string]bool
	// unresolved lists imports that matched no file of the commit (deployed
	// elsewhere): their settings are unknown, the rest still diffs.
	unresolved []string
	err        error
}

type gitRepo struct {
	dir string
	// cat reads file versions; started by the first read (readBlob).
	cat        *catFile
	lsCache    map[string][]string    // rev -> every file path
	caddyCache map[string]caddyResult // rev + "\x00" + root
}

// run executes git with a clean, non-interactive environment.
func (r *gitRepo) run(ctx context.Context, args ...string) ([]byte, error) {
	return r.runInput(ctx, nil, args...)
}

// runInput is run with stdin read from input (none when nil).
func (r *gitRepo) runInput(ctx context.Context, input io.Reader, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", r.dir, "-c", "core.quotepath=off"}, args...)...)
	cmd.Env = append(cmd.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_PAGER=cat")
	cmd.Stdin = input
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s in %s: %w: %s", args[0], r.dir, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// commits lists the first-parent commits of HEAD in the window, oldest first.
func (r *gitRepo) commits(ctx context.Context, since, until time.Time) ([]commit, error) {
	args := []string{"log", "--first-parent", "-z", "--no-color", "--format=%H%x1f%P%x1f%an <%ae>%x1f%cI%x1f%B"}
	if !since.IsZero() {
		args = append(args, "--since=@"+strconv.FormatInt(since.Unix(), 10))
	}
	if !until.IsZero() {
		args = append(args, "--until=@"+strconv.FormatInt(until.Unix(), 10))
	}
	out, err := r.run(ctx, append(args, "HEAD")...)
	if err != nil {
		return nil, err
	}
	var cs []commit
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(bytes.TrimSpace(rec)) == 0 {
			continue
		}
		f := strings.SplitN(string(rec), "\x1f", 5)
		if len(f) != 5 {
			return nil, fmt.Errorf("git log in %s: unexpected record %q", r.dir, truncate(string(rec), 80))
		}
		t, err := time.Parse(time.RFC3339, f[3])
		if err != nil {
			return nil, fmt.Errorf("git log in %s: commit %s: committer date: %w", r.dir, f[0], err)
		}
		// git's --since stops at the first old commit; a clock skew could let an
		// out-of-window one through, so the window is checked here too.
		if (!since.IsZero() && t.Before(since)) || (!until.IsZero() && t.After(until)) {
			continue
		}
		parents := strings.Fields(f[1])
		c := commit{hash: strings.TrimSpace(f[0]), parents: len(parents), author: f[2], time: t,
			message: strings.TrimSpace(f[4])}
		if len(parents) > 0 {
			c.parent = parents[0]
		}
		cs = append(cs, c)
	}
	// git log lists newest first.
	for i, j := 0, len(cs)-1; i < j; i, j = i+1, j-1 {
		cs[i], cs[j] = cs[j], cs[i]
	}
	return cs, nil
}

// fileDelta is one changed path of a commit.
type fileDelta struct {
	status   byte   // A, M, D, R, T, C
	old, new string // old is "" for A; new is "" for D
}

func (d fileDelta) path() string {
	if d.new != "" {
		return d.new
	}
	return d.old
}

// readDeltas sets the deltas of every commit of cs: what it changed against
// its first parent (or, for a root commit, everything it added), renames
// detected. One diff-tree reads them all: each input line names a commit
// and its first parent only (a merge is diffed against the branch it
// landed on), and --always prints a commit's hash even when it changed
// nothing, so the output is each commit's hash, in input order, followed by
// its changes.
func (r *gitRepo) readDeltas(ctx context.Context, cs []commit) error {
	var input strings.Builder
	for _, c := range cs {
		input.WriteString(c.hash)
		if c.parent != "" {
			input.WriteString(" " + c.parent)
		}
		input.WriteString("\n")
	}
	out, err := r.runInput(ctx, strings.NewReader(input.String()), "diff-tree", "--stdin", "--always", "--root", "-r", "-z", "-M",
		"--name-status", "--no-ext-diff", "--no-textconv")
	if err != nil {
		return fmt.Errorf("commits %s to %s: %w", short(cs[0].hash), short(cs[len(cs)-1].hash), err)
	}
	f := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	i := 0
	for k := range cs {
		c := &cs[k]
		if i >= len(f) || f[i] != c.hash {
			return fmt.Errorf("git diff-tree in %s: commit %s: no record", r.dir, short(c.hash))
		}
		i++
		next := ""
		if k+1 < len(cs) {
			next = cs[k+1].hash
		}
		for ; i < len(f) && (next == "" || f[i] != next); i++ {
			st := f[i]
			if st == "" {
				continue
			}
			if len(f) <= i+1 {
				return fmt.Errorf("git diff-tree in %s: commit %s: truncated record", r.dir, short(c.hash))
			}
			switch st[0] {
			case 'R', 'C':
				if len(f) <= i+2 {
					return fmt.Errorf("git diff-tree in %s: commit %s: truncated rename", r.dir, short(c.hash))
				}
				d := fileDelta{status: st[0], old: f[i+1], new: f[i+2]}
				if st[0] == 'C' {
					d.old = "" // a copy adds a file; the source is unchanged
					d.status = 'A'
				}
				c.deltas = append(c.deltas, d)
				i += 2
			case 'A':
				c.deltas = append(c.deltas, fileDelta{status: 'A', new: f[i+1]})
				i++
			case 'D':
				c.deltas = append(c.deltas, fileDelta{status: 'D', old: f[i+1]})
				i++
			default: // M, T, U, X
				c.deltas = append(c.deltas, fileDelta{status: st[0], old: f[i+1], new: f[i+1]})
				i++
			}
		}
	}
	return nil
}

// commitChanges turns one commit into changes.
func (r *gitRepo) commitChanges(ctx context.Context, c commit) ([]sources.Change, []sources.QualityNote, error) {
	ds := c.deltas
	note := c.message
	if c.parents > 1 {
		note = r.mergeNote(ctx, c)
	}
	mk := func(file, key, old, new string) sources.Change {
		return sources.Change{Time: c.time, Source: changes.SourceGit, Ref: c.hash, File: file, Key: key,
			Old: old, New: new, Note: note, Author: c.author}
	}
	var out []sources.Change
	var notes []sources.QualityNote
	qnote := func(sev sources.Severity, format string, args ...any) {
		notes = append(notes, sources.QualityNote{Source: changes.SourceGit, Severity: sev,
			Message: fmt.Sprintf("%s commit %s: ", r.dir, short(c.hash)) + fmt.Sprintf(format, args...)})
	}

	changed := map[string]bool{}
	caddyish := false
	var unknown []fileDelta
	for _, d := range ds {
		changed[d.old], changed[d.new] = true, true
		f := formatOf(d.path())
		// Any file of no other sure format may be imported by a Caddyfile.
		if f == formatCaddyfile || f == formatCaddyFragment || f == formatUnknown || f == formatConf {
			caddyish = true
		}
	}
	delete(changed, "")

	// Caddyfiles first: a changed import changes the Caddyfiles that include it.
	handled := map[string]bool{}
	if caddyish {
		cs, ns, h, err := r.caddyChanges(ctx, c, ds, changed, mk)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, cs...)
		notes = append(notes, ns...)
		handled = h
	}

	for _, d := range ds {
		if handled[d.path()] {
			continue
		}
		f := formatOf(d.path())
		if f == formatUnknown && d.old != "" && d.new != "" && d.old != d.new {
			f = formatOf(d.old) // renamed to an unknown name: judge by the old one
		}
		switch f {
		case formatUnknown, formatCaddyfile, formatCaddyFragment:
			unknown = append(unknown, d)
			continue
		}
		var oldKV, newKV map[string]string
		var perr error
		if d.old != "" {
			oldKV, perr = r.keysAt(ctx, c.parent, d.old, f)
		}
		if perr == nil && d.new != "" {
			newKV, perr = r.keysAt(ctx, c.hash, d.new, f)
		}
		if perr != nil {
			if f != formatConf {
				qnote(sources.SeverityWarning, "%s read as a file change: %v", d.path(), perr)
			}
			unknown = append(unknown, d)
			continue
		}
		kd := diffKeys(oldKV, newKV)
		if len(kd) == 0 {
			unknown = append(unknown, d) // comments only, or a pure rename
			continue
		}
		for _, k := range kd {
			out = append(out, mk(d.path(), k[0], k[1], k[2]))
		}
	}

	if len(unknown) > maxFileLevel {
		dir := commonDir(unknown)
		out = append(out, mk(dir, "", "", fmt.Sprintf("%d files changed", len(unknown))))
		qnote(sources.SeverityInfo, "%d files of unrecognised formats under %q listed as one change", len(unknown), dir)
	} else {
		for _, d := range unknown {
			ch := mk(d.path(), "", "", "")
			switch d.status {
			case 'A':
				ch.New = "added"
			case 'D':
				ch.Old = "deleted"
			case 'R':
				ch.Old, ch.New = "renamed from "+d.old, "renamed to "+d.new
			}
			out = append(out, ch)
		}
	}
	return out, notes, nil
}

// caddyChanges diffs every Caddyfile root whose own file or any imported file
// the commit touched. It returns the changed paths it accounted for.
func (r *gitRepo) caddyChanges(ctx context.Context, c commit, ds []fileDelta, changed map[string]bool,
	mk func(file, key, old, new string) sources.Change) ([]sources.Change, []sources.QualityNote, map[string]bool, error) {
	type pair struct{ old, new string }
	roots := map[string]*pair{} // keyed by new path (or old when deleted)
	renamedTo := map[string]string{}
	for _, d := range ds {
		if d.status == 'R' {
			renamedTo[d.old] = d.new
		}
	}
	var oldFiles []string
	if c.parent != "" {
		var err error
		if oldFiles, err = r.lsTree(ctx, c.parent); err != nil {
			return nil, nil, nil, err
		}
	}
	for _, f := range r.filesAfter(c, oldFiles) {
		if formatOf(f) == formatCaddyfile {
			roots[f] = &pair{new: f}
		}
	}
	if c.parent != "" {
		for _, f := range oldFiles {
			if formatOf(f) != formatCaddyfile {
				continue
			}
			key := f
			if to, ok := renamedTo[f]; ok {
				key = to
			}
			if p, ok := roots[key]; ok {
				p.old = f
			} else if _, stillThere := roots[f]; !stillThere {
				roots[key] = &pair{old: f}
			}
		}
	}
	names := make([]string, 0, len(roots))
	for k := range roots {
		names = append(names, k)
	}
	sort.Strings(names)

	var out []sources.Change
	var notes []sources.QualityNote
	handled := map[string]bool{}
	for _, name := range names {
		p := roots[name]
		var oldRes, newRes caddyResult
		if p.old != "" {
			oldRes = r.caddyAt(ctx, c.parent, p.old)
		}
		if p.new != "" {
			newRes = r.caddyAt(ctx, c.hash, p.new)
		}
		// Which changed files does this Caddyfile consist of?
		var touched []string
		for f := range changed {
			if oldRes.closure[f] || newRes.closure[f] || f == p.old || f == p.new {
				touched = append(touched, f)
			}
		}
		if len(touched) == 0 {
			continue
		}
		sort.Strings(touched)
		for _, f := range touched {
			handled[f] = true
		}
		file := name
		if !changed[p.new] && !changed[p.old] {
			file = touched[0] // only an imported file changed
		}
		if oldRes.err != nil || newRes.err != nil {
			err := oldRes.err
			if err == nil {
				err = newRes.err
			}
			notes = append(notes, sources.QualityNote{Source: changes.SourceGit, Severity: sources.SeverityWarning,
				Message: fmt.Sprintf("%s commit %s: %v (listed as a file change)", r.dir, short(c.hash), err)})
			out = append(out, mk(file, "", "", ""))
			continue
		}
		if u := newRes.unresolved; len(u) > 0 {
			notes = append(notes, sources.QualityNote{Source: changes.SourceGit, Severity: sources.SeverityInfo,
				Message: fmt.Sprintf("%s commit %s: %s imports %s, not in the repository: those settings are not diffed",
					r.dir, short(c.hash), p.new, strings.Join(u, ", "))})
		}
		kd := diffKeys(oldRes.keys, newRes.keys)
		if len(kd) == 0 {
			ch := mk(file, "", "", "")
			if p.old != "" && p.new != "" && p.old != p.new {
				ch.Old, ch.New = "renamed from "+p.old, "renamed to "+p.new
			}
			out = append(out, ch)
			continue
		}
		for _, k := range kd {
			out = append(out, mk(file, k[0], k[1], k[2]))
		}
	}
	// A fragment (*.caddy) no Caddyfile imports is parsed on its own.
	for _, d := range ds {
		if handled[d.path()] || formatOf(d.path()) != formatCaddyFragment {
			continue
		}
		var oldRes, newRes caddyResult
		if d.old != "" {
			oldRes = r.caddyAt(ctx, c.parent, d.old)
		}
		if d.new != "" {
			newRes = r.caddyAt(ctx, c.hash, d.new)
		}
		if oldRes.err != nil || newRes.err != nil {
			continue // left to the file-level listing
		}
		kd := diffKeys(oldRes.keys, newRes.keys)
		if len(kd) == 0 {
			continue
		}
		handled[d.path()] = true
		for _, k := range kd {
			out = append(out, mk(d.path(), k[0], k[1], k[2]))
		}
	}
	return out, notes, handled, nil
}

// caddyAt parses the Caddyfile root at rev, cached: each commit's new side is
// the next commit's old side.
func (r *gitRepo) caddyAt(ctx context.Context, rev, root string) caddyResult {
	ck := rev + "\x00" + root
	if res, ok := r.caddyCache[ck]; ok {
		return res
	}
	keys, closure, unresolved, err := parseCaddy(&gitTree{r: r, ctx: ctx, rev: rev}, root)
	res := caddyResult{keys: keys, closure: map[string]bool{}, err: err}
	for _, f := range closure {
		res.closure[f] = true
	}
	res.unresolved = unresolved
	if err != nil {
		res.err = fmt.Errorf("%s at %s: %w", root, short(rev), err)
	}
	r.caddyCache[ck] = res
	return res
}

// readBlob returns the blob named by "rev:path" (catFile.read), starting
// the batch process on the first read: a history whose commits changed
// only files that are never read needs none.
func (r *gitRepo) readBlob(ctx context.Context, object string) ([]byte, bool, error) {
	if r.cat == nil {
		cat, err := startCatFile(ctx, r.dir)
		if err != nil {
			return nil, false, err
		}
		r.cat = cat
	}
	return r.cat.read(object)
}

// closeCat ends the batch process, if one was started.
func (r *gitRepo) closeCat() {
	if r.cat != nil {
		r.cat.close()
	}
}

// keysAt reads and parses one file version.
func (r *gitRepo) keysAt(ctx context.Context, rev, name string, f format) (map[string]string, error) {
	data, ok, err := r.readBlob(ctx, rev+":"+name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s at %s: not a file", name, short(rev))
	}
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		return nil, fmt.Errorf("%s at %s: binary content", name, short(rev))
	}
	kv, err := parseKeys(f, name, data)
	if err != nil {
		return nil, fmt.Errorf("at %s: %w", short(rev), err)
	}
	return kv, nil
}

// filesAfter lists every file path of commit c, as lsTree would, from its
// first parent's (parentFiles; none for a root commit) and its deltas: a
// process fewer per commit, and the next commit's parent is then cached.
// It sorts byte-wise, which is ls-tree -r's order: git orders the entries
// of a tree by name, a subtree's name compared with a "/" after it, and so
// the recursive listing by the whole path.
func (r *gitRepo) filesAfter(c commit, parentFiles []string) []string {
	if fs, ok := r.lsCache[c.hash]; ok {
		return fs
	}
	set := make(map[string]bool, len(parentFiles)+len(c.deltas))
	for _, f := range parentFiles {
		set[f] = true
	}
	for _, d := range c.deltas {
		if d.old != d.new {
			delete(set, d.old)
		}
	}
	for _, d := range c.deltas {
		if d.new != "" {
			set[d.new] = true
		}
	}
	delete(set, "")
	fs := make([]string, 0, len(set))
	for f := range set {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	r.lsCache[c.hash] = fs
	return fs
}

func (r *gitRepo) lsTree(ctx context.Context, rev string) ([]string, error) {
	if fs, ok := r.lsCache[rev]; ok {
		return fs, nil
	}
	out, err := r.run(ctx, "ls-tree", "-r", "-z", "--name-only", rev)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", short(rev), err)
	}
	var fs []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			fs = append(fs, f)
		}
	}
	r.lsCache[rev] = fs
	return fs, nil
}

// mergeNote is a merge's message plus the subjects of the commits it brought
// in, since "Merge branch 'x'" alone says little about what changed.
func (r *gitRepo) mergeNote(ctx context.Context, c commit) string {
	out, err := r.run(ctx, "log", "--no-color", "--format=%s", c.hash+"^1.."+c.hash+"^2")
	if err != nil {
		return c.message
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return c.message
	}
	return c.message + "\n\nMerged: " + strings.Join(lines, "; ")
}

// gitTree is the tree of one commit, for Caddyfile imports.
type gitTree struct {
	r   *gitRepo
	ctx context.Context
	rev string
}

func (t *gitTree) readFile(name string) ([]byte, bool, error) {
	data, ok, err := t.r.readBlob(t.ctx, t.rev+":"+name)
	if err != nil || !ok {
		return nil, false, err
	}
	return data, true, nil
}

func (t *gitTree) files() ([]string, error) { return t.r.lsTree(t.ctx, t.rev) }

func (t *gitTree) glob(pattern string) ([]string, error) {
	fs, err := t.files()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range fs {
		ok, err := path.Match(pattern, f)
		if err != nil {
			return nil, err
		}
		// Caddy skips dotfiles matched by a leading wildcard.
		if ok && !(strings.HasPrefix(path.Base(f), ".") && strings.HasPrefix(path.Base(pattern), "*")) {
			out = append(out, f)
		}
	}
	return out, nil
}

// catFile keeps one "git cat-file --batch" process to read file versions
// without a process per file.
type catFile struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	dir string
}

func startCatFile(ctx context.Context, dir string) (*catFile, error) {
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "cat-file", "--batch")
	cmd.Env = append(cmd.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("git cat-file in %s: %w", dir, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("git cat-file in %s: %w", dir, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("git cat-file in %s: %w", dir, err)
	}
	return &catFile{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64*1024), dir: dir}, nil
}

// read returns the blob named by "rev:path"; ok is false when there is no such
// blob (missing path, or a directory or submodule).
func (c *catFile) read(object string) ([]byte, bool, error) {
	if strings.ContainsAny(object, "\n") {
		return nil, false, fmt.Errorf("git cat-file in %s: object name with a newline: %q", c.dir, object)
	}
	if _, err := io.WriteString(c.in, object+"\n"); err != nil {
		return nil, false, fmt.Errorf("git cat-file in %s: %s: %w", c.dir, object, err)
	}
	header, err := c.out.ReadString('\n')
	if err != nil {
		return nil, false, fmt.Errorf("git cat-file in %s: %s: %w", c.dir, object, err)
	}
	f := strings.Fields(header)
	if len(f) == 2 && (f[1] == "missing" || f[1] == "ambiguous") {
		return nil, false, nil
	}
	if len(f) != 3 {
		return nil, false, fmt.Errorf("git cat-file in %s: %s: unexpected header %q", c.dir, object, header)
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return nil, false, fmt.Errorf("git cat-file in %s: %s: size %q: %w", c.dir, object, f[2], err)
	}
	if f[1] != "blob" || size > maxConfigBytes {
		if _, err := io.CopyN(io.Discard, c.out, size+1); err != nil {
			return nil, false, fmt.Errorf("git cat-file in %s: %s: %w", c.dir, object, err)
		}
		if f[1] == "blob" {
			return nil, false, fmt.Errorf("%s: %d bytes, larger than a configuration file", object, size)
		}
		return nil, false, nil
	}
	buf := make([]byte, size+1)
	if _, err := io.ReadFull(c.out, buf); err != nil {
		return nil, false, fmt.Errorf("git cat-file in %s: %s: %w", c.dir, object, err)
	}
	return buf[:size], true, nil
}

// close ends the batch process (it exits when its input closes); its exit
// status carries nothing that the reads did not already report.
func (c *catFile) close() {
	c.in.Close()
	_ = c.cmd.Wait()
}

// commonDir is the deepest directory holding every delta ("" for the root).
func commonDir(ds []fileDelta) string {
	var prefix []string
	for i, d := range ds {
		parts := strings.Split(path.Dir(d.path()), "/")
		if parts[0] == "." {
			parts = nil
		}
		if i == 0 {
			prefix = parts
			continue
		}
		n := 0
		for n < len(prefix) && n < len(parts) && prefix[n] == parts[n] {
			n++
		}
		prefix = prefix[:n]
	}
	if len(prefix) == 0 {
		return ""
	}
	return strings.Join(prefix, "/") + "/"
}

func short(hash string) string {
	if len(hash) > 7 {
		return hash[:7]
	}
	return hash
}
