package configrepo

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// tree is one version of a configuration repository (a commit, or a directory
// on disk): what a Caddyfile's imports resolve against. Names are slash paths
// relative to the tree's root.
type tree interface {
	// readFile returns a file's contents; ok is false when it does not exist.
	readFile(name string) (data []byte, ok bool, err error)
	// glob returns the files matching a path.Match pattern.
	glob(pattern string) ([]string, error)
	// files lists every file (for absolute imports that point into the repo
	// from where it is deployed, e.g. /etc/caddy/snippets/*.caddy).
	files() ([]string, error)
}

// dirTree is a directory on disk.
type dirTree struct{ base string }

func (t dirTree) readFile(name string) ([]byte, bool, error) {
	b, err := os.ReadFile(filepath.Join(t.base, filepath.FromSlash(name)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	return b, err == nil, err
}

func (t dirTree) glob(pattern string) ([]string, error) {
	m, err := filepath.Glob(filepath.Join(t.base, filepath.FromSlash(pattern)))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(m))
	for _, f := range m {
		if rel, err := filepath.Rel(t.base, f); err == nil {
			out = append(out, filepath.ToSlash(rel))
		}
	}
	return out, nil
}

func (t dirTree) files() ([]string, error) {
	var out []string
	err := filepath.WalkDir(t.base, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(t.base, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}

// CaddyfileKeys parses a Caddyfile on disk (following its imports, relative to
// its directory) and returns its settings as flat keys, as FromGit diffs them:
// "php_fastcgi.health_timeout", "rate_limit.zone.link_walk.events", ...
// Environment placeholders take their defaults (see expandEnvPlaceholders).
// unresolved lists imports that pointed at no file.
func CaddyfileKeys(file string) (keys map[string]string, unresolved []string, err error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, nil, fmt.Errorf("caddyfile %s: %w", file, err)
	}
	keys, _, unresolved, err = parseCaddy(dirTree{filepath.Dir(abs)}, filepath.Base(abs))
	return keys, unresolved, err
}

// envPlaceholder is Caddy's parse-time placeholder {$VAR} / {$VAR:default}.
var envPlaceholder = regexp.MustCompile(`\{\$([^}:]+)(?::([^}]*))?\}`)

// expandEnvPlaceholders replaces {$VAR:default} with its default before Caddy's
// parser sees the text. Caddy would look VAR up in the environment of the
// process that parses, which here is the analyst's machine, not the server: the
// result would change from one laptop to the next. A placeholder without a
// default becomes the runtime placeholder {env.VAR}, which the parser keeps as
// written, so the key still shows that the server's environment decides.
func expandEnvPlaceholders(b []byte) []byte {
	return envPlaceholder.ReplaceAllFunc(b, func(m []byte) []byte {
		sm := envPlaceholder.FindSubmatch(m)
		if sm[2] != nil || strings.Contains(string(m), ":") {
			return sm[2]
		}
		return []byte("{env." + string(sm[1]) + "}")
	})
}

// parseCaddy parses the Caddyfile root of tree t with Caddy's own parser, which
// resolves snippets, imports (with arguments) and blocks. Caddy reads imported
// files from disk, so the files the root imports (transitively) are first
// copied from the tree into a temporary directory, placeholders expanded.
// closure lists the tree files the configuration was read from; unresolved
// lists imports that matched nothing.
func parseCaddy(t tree, root string) (keys map[string]string, closure, unresolved []string, err error) {
	tmp, err := os.MkdirTemp("", "aftermath-caddy-")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("caddyfile %s: %w", root, err)
	}
	defer os.RemoveAll(tmp)

	snippets := map[string]bool{}
	contents := map[string][]byte{}
	var missing []string
	queue := []string{root}
	seen := map[string]bool{root: true}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		data, ok, err := t.readFile(name)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("caddyfile %s: reading %s: %w", root, name, err)
		}
		if !ok {
			if name == root {
				return nil, nil, nil, fmt.Errorf("caddyfile %s: no such file", root)
			}
			missing = append(missing, name)
			continue
		}
		closure = append(closure, name)
		data = expandEnvPlaceholders(data)
		toks, err := caddyfile.Tokenize(data, name)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("caddyfile %s: %w", name, err)
		}
		for i, tok := range toks {
			if lineStart(toks, i) && len(tok.Text) > 2 && strings.HasPrefix(tok.Text, "(") && strings.HasSuffix(tok.Text, ")") {
				snippets[tok.Text[1:len(tok.Text)-1]] = true
			}
		}
		lines := strings.Split(string(data), "\n")
		rewrote := false
		for i, tok := range toks {
			if tok.Text != "import" || !lineStart(toks, i) || i+1 >= len(toks) || toks[i+1].Line != tok.Line {
				continue
			}
			pat := toks[i+1].Text
			if snippets[pat] {
				continue
			}
			var target string
			if path.IsAbs(pat) {
				// Deployed paths (/etc/caddy/...) are mapped onto the
				// repository by their longest matching suffix, and the
				// import is rewritten to the copy in tmp.
				rel := absIntoTree(t, pat)
				if rel == "" {
					missing = append(missing, pat)
					continue
				}
				target = rel
				if ln := tok.Line - 1; ln < len(lines) {
					if j := strings.Index(lines[ln], pat); j >= 0 {
						lines[ln] = lines[ln][:j] + filepath.Join(tmp, filepath.FromSlash(rel)) + lines[ln][j+len(pat):]
						rewrote = true
					}
				}
			} else {
				target = path.Join(path.Dir(name), pat)
			}
			var matches []string
			if strings.ContainsAny(target, "*?[") {
				if matches, err = t.glob(target); err != nil {
					return nil, nil, nil, fmt.Errorf("caddyfile %s: import %s: %w", name, pat, err)
				}
			} else {
				matches = []string{target}
			}
			for _, m := range matches {
				if !seen[m] {
					seen[m] = true
					queue = append(queue, m)
				}
			}
		}
		if rewrote {
			data = []byte(strings.Join(lines, "\n"))
		}
		contents[name] = data
	}
	for name, data := range contents {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, nil, nil, fmt.Errorf("caddyfile %s: %w", root, err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, nil, nil, fmt.Errorf("caddyfile %s: %w", root, err)
		}
	}
	for _, m := range missing {
		// An import of a name that is neither a file nor a snippet seen so far
		// may be a snippet defined in a later import: only report real misses.
		if !snippets[m] && !snippets[path.Base(m)] {
			unresolved = append(unresolved, m)
		}
	}
	blocks, err := caddyfile.Parse(filepath.Join(tmp, filepath.FromSlash(root)), contents[root])
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), tmp+string(filepath.Separator), "")
		return nil, closure, unresolved, fmt.Errorf("caddyfile %s: %s", root, msg)
	}
	sort.Strings(closure)
	return flattenCaddy(blocks), closure, unresolved, nil
}

// lineStart reports whether toks[i] is the first token of its line.
func lineStart(toks []caddyfile.Token, i int) bool {
	if i == 0 {
		return true
	}
	prev := toks[i-1]
	return prev.File != toks[i].File || prev.Line+prev.NumLineBreaks() < toks[i].Line
}

// absIntoTree maps an absolute deployed path (or glob) onto the tree: the tree
// path that is the longest suffix of it, e.g. /etc/caddy/snippets/rl.caddy ->
// caddy/snippets/rl.caddy. For a glob the directory is mapped.
func absIntoTree(t tree, abs string) string {
	dir, file := path.Split(abs)
	files, err := t.files()
	if err != nil {
		return ""
	}
	best := ""
	for _, f := range files {
		if strings.ContainsAny(file, "*?[") {
			d := path.Dir(f)
			if strings.HasSuffix(dir, "/"+d+"/") && len(d) > len(best) {
				best = d
			}
			continue
		}
		if strings.HasSuffix(abs, "/"+f) && len(f) > len(best) {
			best = f
		}
	}
	if best != "" && strings.ContainsAny(file, "*?[") {
		return best + "/" + file
	}
	return best
}

// transparent directives only group others: their children are keyed as if
// they stood at the site level, so php_fastcgi inside route { } is still
// "php_fastcgi.health_timeout".
var transparent = map[string]bool{"route": true, "handle": true, "handle_path": true}

// flattenCaddy turns parsed server blocks into flat keys. A directive's
// arguments are its value ("on" when it has none, so that removing it shows);
// sub-directives extend the key with a dot. rate_limit zones and named global
// logs are keyed by name (rate_limit.zone.link_walk.events). The global options
// block is under "global.", a named route under "named_route.NAME.". A key set
// by several site blocks is qualified with the site: "bind@http://:8080".
// Repeated directives in one place are joined with "; " in order.
func flattenCaddy(blocks []caddyfile.ServerBlock) map[string]string {
	type site struct {
		label string
		kv    map[string][]string
	}
	global := map[string][]string{}
	var sites []site
	for _, b := range blocks {
		kv, prefix := global, ""
		switch {
		case len(b.Keys) == 0:
			prefix = "global."
		case b.IsNamedRoute:
			prefix = "named_route."
		default:
			kv = map[string][]string{}
			sites = append(sites, site{strings.Join(b.GetKeysText(), ","), kv})
		}
		for _, seg := range b.Segments {
			d := caddyfile.NewDispenser(seg)
			if d.Next() {
				walkCaddy(d, prefix, kv)
			}
		}
	}
	inSites := map[string]int{}
	for _, s := range sites {
		for k := range s.kv {
			inSites[k]++
		}
	}
	out := map[string]string{}
	for k, v := range global {
		out[k] = strings.Join(v, "; ")
	}
	for _, s := range sites {
		for k, v := range s.kv {
			key := k
			if inSites[k] > 1 {
				key = k + "@" + s.label
			}
			out[key] = strings.Join(v, "; ")
		}
	}
	return out
}

func walkCaddy(d *caddyfile.Dispenser, prefix string, kv map[string][]string) {
	name := d.Val()
	// Raw arguments keep their quotes: `expression {query} == ""` stays exact.
	args := d.RemainingArgsRaw()
	key := prefix + name
	if len(args) > 0 && (name == "zone" || (prefix == "global." && name == "log")) {
		key += "." + args[0]
		args = args[1:]
	}
	child := key + "."
	if transparent[name] {
		child = prefix
	} else {
		val := strings.Join(args, " ")
		if val == "" {
			val = "on"
		}
		kv[key] = append(kv[key], val)
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		walkCaddy(d, child, kv)
	}
}
