package configrepo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// format is a configuration file format whose keys FromGit can diff.
type format int

const (
	formatUnknown       format = iota
	formatFPM                  // php-fpm pool or php-fpm.conf (ini with [pool] sections)
	formatPHPINI               // php.ini and conf.d/*.ini
	formatCaddyfile            // a Caddyfile (root of an import tree)
	formatCaddyFragment        // *.caddy: usually imported by a Caddyfile
	formatDockerfile
	formatEnv
	formatTFVars
	formatTFVarsJSON
	formatConf // any other *.conf: tried as a pool file, else a file-level change
)

func (f format) String() string {
	return [...]string{"unknown", "php-fpm pool", "php.ini", "Caddyfile", "Caddyfile fragment",
		"Dockerfile", "env file", "Terraform variables", "Terraform variables (JSON)", "conf file"}[f]
}

// formatOf guesses a file's format from its path alone, so that files of
// unknown formats (images, stylesheets, documentation) are never read: a commit
// of thousands of assets must stay cheap.
func formatOf(p string) format {
	base := path.Base(p)
	lower := strings.ToLower(base)
	dir := strings.ToLower(path.Dir(p))
	switch {
	case base == "Caddyfile" || strings.HasPrefix(base, "Caddyfile.") || strings.HasSuffix(lower, ".caddyfile"):
		return formatCaddyfile
	case strings.HasSuffix(lower, ".caddy"):
		return formatCaddyFragment
	case base == "Dockerfile" || base == "Containerfile" || strings.HasPrefix(base, "Dockerfile.") ||
		strings.HasSuffix(lower, ".dockerfile"):
		return formatDockerfile
	case lower == ".env" || strings.HasPrefix(lower, ".env.") || strings.HasSuffix(lower, ".env"):
		return formatEnv
	case strings.HasSuffix(lower, ".tfvars"):
		return formatTFVars
	case strings.HasSuffix(lower, ".tfvars.json"):
		return formatTFVarsJSON
	case lower == "php.ini" || strings.HasPrefix(lower, "php.ini-") || strings.HasSuffix(lower, ".ini"):
		return formatPHPINI
	case strings.HasSuffix(lower, ".conf") && (lower == "www.conf" || strings.Contains(lower, "fpm") ||
		strings.Contains(dir, "fpm") || strings.Contains(dir, "pool") || strings.Contains(dir, "php")):
		return formatFPM
	case strings.HasSuffix(lower, ".conf") || strings.HasSuffix(lower, ".conf.default"):
		// A .conf elsewhere may still be a pool file (it is tried as ini and
		// falls back to a file-level change when it is not: nginx.conf).
		return formatConf
	}
	return formatUnknown
}

// parseKeys turns one version of a file into its flat key/value settings
// (Caddyfiles are parsed by parseCaddy, which needs the whole tree for imports).
func parseKeys(f format, name string, data []byte) (map[string]string, error) {
	switch f {
	case formatFPM, formatConf:
		return parseINI(name, data, true)
	case formatPHPINI:
		return parseINI(name, data, false)
	case formatDockerfile:
		return parseDockerfile(name, data)
	case formatEnv:
		return parseEnv(name, data)
	case formatTFVars:
		return parseTFVars(name, data)
	case formatTFVarsJSON:
		return parseTFVarsJSON(name, data)
	}
	return nil, fmt.Errorf("%s: no key parser for %s", name, f)
}

// parseINI reads php-fpm pool files and php.ini: "key = value" lines, ";" (and,
// leniently, "#") comments, "[section]" headers. The last assignment of a key
// wins, as in PHP's own ini parser.
//
// For php-fpm (fpm true) keys are named as php-fpm names them ("listen.backlog")
// so that a pool file, an env file and a metric step of the same knob meet on the
// same key; [global] keys get a "global." prefix, and when one file declares
// several pools each key is prefixed with its pool, "[api]listen.backlog", because
// then a bare key would be ambiguous. php.ini sections do not scope keys, so they
// are dropped.
func parseINI(name string, data []byte, fpm bool) (map[string]string, error) {
	type entry struct{ section, key, value string }
	var entries []entry
	pools := map[string]bool{}
	section := ""
	err := eachSettingLine(name, data, ";#", func(line int, s string) error {
		if s[0] == '[' {
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return fmt.Errorf("%s:%d: unterminated section header %q", name, line, s)
			}
			section = strings.TrimSpace(s[1:end])
			if section != "global" {
				pools[section] = true
			}
			return nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return fmt.Errorf("%s:%d: not an ini line: %q", name, line, truncate(s, 60))
		}
		key := strings.TrimSpace(s[:eq])
		if strings.ContainsAny(key, " \t{}") {
			return fmt.Errorf("%s:%d: not an ini key: %q", name, line, truncate(key, 60))
		}
		entries = append(entries, entry{section, key, iniValue(s[eq+1:])})
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		k := e.key
		if fpm {
			switch {
			case e.section == "global":
				k = "global." + k
			case len(pools) > 1:
				k = "[" + e.section + "]" + k
			}
		}
		out[k] = e.value
	}
	return out, nil
}

// iniValue unquotes a value (a double-quoted one may escape its quote, as
// php-fpm's access.format does) and drops a trailing "; comment".
func iniValue(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 1 && (v[0] == '"' || v[0] == '\'') {
		q := v[0]
		var b strings.Builder
		for i := 1; i < len(v); i++ {
			switch {
			case q == '"' && v[i] == '\\' && i+1 < len(v) && (v[i+1] == '"' || v[i+1] == '\\'):
				b.WriteByte(v[i+1])
				i++
			case v[i] == q:
				return b.String()
			default:
				b.WriteByte(v[i])
			}
		}
		return b.String()
	}
	if i := strings.Index(v, ";"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return v
}

// parseEnv reads KEY=VALUE files (.env, docker env files), with optional
// "export", quotes and "#" comments. Knob variables are mapped to their
// canonical keys by envKey.
func parseEnv(name string, data []byte) (map[string]string, error) {
	out := map[string]string{}
	err := eachSettingLine(name, data, "#", func(line int, s string) error {
		s = strings.TrimPrefix(s, "export ")
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return fmt.Errorf("%s:%d: not a KEY=VALUE line: %q", name, line, truncate(s, 60))
		}
		k := strings.TrimSpace(s[:eq])
		v := strings.TrimSpace(s[eq+1:])
		switch {
		case len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && strings.IndexByte(v[1:], v[0]) >= 0:
			v = v[1 : 1+strings.IndexByte(v[1:], v[0])]
		default:
			if i := strings.Index(v, " #"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
		}
		out[envKey(k, "env.")] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachSettingLine calls fn with each line of data (trimmed, and its number)
// that is neither blank nor a comment, one starting with a byte of comments;
// it stops at fn's first error. A line over 1 MiB is an error naming the file.
func eachSettingLine(name string, data []byte, comments string, fn func(line int, s string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.IndexByte(comments, s[0]) >= 0 {
			continue
		}
		if err := fn(line, s); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// envKey maps a variable that sets a php-fpm knob to the pool file's key:
// PHP_FPM_PM_MAX_CHILDREN -> pm.max_children, PHP_FPM_LISTEN_BACKLOG ->
// listen.backlog, PHP_VERSION -> php_version. Other names keep their spelling
// behind prefix ("env." or "tfvars."), so they never collide with pool keys.
func envKey(name, prefix string) string {
	u := strings.ToUpper(strings.TrimSpace(name))
	if u == "PHP_VERSION" {
		return "php_version"
	}
	rest, prefixed := "", false
	for _, p := range []string{"PHP_FPM_", "PHPFPM_", "FPM_", "PHP_"} {
		if strings.HasPrefix(u, p) {
			rest, prefixed = u[len(p):], true
			break
		}
	}
	if !prefixed {
		rest = u
	}
	switch {
	case rest == "PM" && prefixed:
		return "pm"
	case strings.HasPrefix(rest, "PM_"):
		return "pm." + strings.ToLower(rest[3:])
	case strings.HasPrefix(rest, "LISTEN_") && (prefixed || rest == "LISTEN_BACKLOG"):
		return "listen." + strings.ToLower(rest[7:])
	case rest == "LISTEN" && prefixed && !strings.HasPrefix(u, "PHP_LISTEN"):
		return "listen"
	case rest == "REQUEST_TERMINATE_TIMEOUT" || rest == "REQUEST_SLOWLOG_TIMEOUT":
		return strings.ToLower(rest)
	}
	return prefix + name
}

var (
	tfAssign  = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*(.*)$`)
	spaceRuns = regexp.MustCompile(`\s+`)
)

// parseTFVars reads Terraform .tfvars (HCL attributes): strings, numbers,
// booleans, and lists or maps spread over several lines (kept as compact text).
// Knob variables (php_fpm_pm_max_children) map to canonical keys like env files.
func parseTFVars(name string, data []byte) (map[string]string, error) {
	out := map[string]string{}
	lines := strings.Split(string(data), "\n")
	inComment := false
	for i := 0; i < len(lines); i++ {
		s := strings.TrimSpace(lines[i])
		if inComment {
			if j := strings.Index(s, "*/"); j >= 0 {
				inComment = false
				s = strings.TrimSpace(s[j+2:])
			} else {
				continue
			}
		}
		if strings.HasPrefix(s, "/*") {
			if !strings.Contains(s, "*/") {
				inComment = true
			}
			continue
		}
		if s == "" || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "//") {
			continue
		}
		m := tfAssign.FindStringSubmatch(s)
		if m == nil {
			return nil, fmt.Errorf("%s:%d: not a variable assignment: %q", name, i+1, truncate(s, 60))
		}
		v := strings.TrimSpace(m[2])
		if depth := bracketDepth(v); depth > 0 {
			// A list or map: gather lines until the brackets balance.
			start := i
			for depth > 0 && i+1 < len(lines) {
				i++
				v += " " + strings.TrimSpace(lines[i])
				depth = bracketDepth(v)
			}
			if depth > 0 {
				return nil, fmt.Errorf("%s:%d: unterminated value of %s", name, start+1, m[1])
			}
			v = spaceRuns.ReplaceAllString(v, " ")
		} else {
			v = tfScalar(v)
		}
		out[envKey(m[1], "tfvars.")] = v
	}
	return out, nil
}

// tfScalar unquotes an HCL string and drops a trailing comment.
func tfScalar(v string) string {
	if strings.HasPrefix(v, `"`) {
		if s, err := strconv.QuotedPrefix(v); err == nil {
			if u, err := strconv.Unquote(s); err == nil {
				return u
			}
		}
		return strings.Trim(v, `"`)
	}
	for _, c := range []string{" #", " //"} {
		if i := strings.Index(v, c); i >= 0 {
			v = v[:i]
		}
	}
	return strings.TrimSpace(v)
}

// bracketDepth counts unclosed [ and { outside strings.
func bracketDepth(s string) int {
	depth, inStr, esc := 0, false, false
	for _, r := range s {
		switch {
		case esc:
			esc = false
		case inStr && r == '\\':
			esc = true
		case r == '"':
			inStr = !inStr
		case inStr:
		case r == '[' || r == '{':
			depth++
		case r == ']' || r == '}':
			depth--
		}
	}
	return depth
}

// parseTFVarsJSON reads *.tfvars.json: a JSON object of variables.
func parseTFVarsJSON(name string, data []byte) (map[string]string, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out := make(map[string]string, len(doc))
	for k, raw := range doc {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out[envKey(k, "tfvars.")] = s
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, k, err)
		}
		out[envKey(k, "tfvars.")] = buf.String()
	}
	return out, nil
}

var (
	dockerVar     = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-+]([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)`)
	phpVersionTag = regexp.MustCompile(`^(\d+(?:\.\d+){0,2})`)
)

// parseDockerfile reports the image the final stage runs on (base_image) and the
// PHP version of the last php image used (php_version, from its tag: "php:8.3-fpm"
// -> "8.3"). ARGs declared before FROM are expanded with their defaults, stage
// aliases are followed to the external image, and ENV lines that set php-fpm
// knobs (PHP_FPM_PM_MAX_CHILDREN=...) map to the pool keys.
func parseDockerfile(name string, data []byte) (map[string]string, error) {
	out := map[string]string{}
	args := map[string]string{}
	stages := map[string]string{} // alias -> resolved image
	final := ""
	for _, ins := range dockerInstructions(data) {
		fields := strings.Fields(ins)
		if len(fields) == 0 {
			continue
		}
		expand := func(s string) string {
			return dockerVar.ReplaceAllStringFunc(s, func(m string) string {
				sm := dockerVar.FindStringSubmatch(m)
				n := sm[1] + sm[3]
				if v, ok := args[n]; ok && v != "" {
					return v
				}
				return sm[2]
			})
		}
		switch strings.ToUpper(fields[0]) {
		case "ARG":
			for _, a := range fields[1:] {
				k, v, _ := strings.Cut(a, "=")
				if _, seen := args[k]; !seen || v != "" {
					args[k] = strings.Trim(v, `"'`)
				}
				if k == "PHP_VERSION" && v != "" {
					out["php_version"] = strings.Trim(v, `"'`)
				}
			}
		case "FROM":
			rest := fields[1:]
			for len(rest) > 0 && strings.HasPrefix(rest[0], "--") {
				rest = rest[1:]
			}
			if len(rest) == 0 {
				return nil, fmt.Errorf("%s: FROM without an image", name)
			}
			img := expand(rest[0])
			if r, ok := stages[strings.ToLower(img)]; ok {
				img = r
			}
			if len(rest) >= 3 && strings.EqualFold(rest[1], "AS") {
				stages[strings.ToLower(rest[2])] = img
			}
			final = img
			if v := phpImageVersion(img); v != "" {
				out["php_version"] = v
			}
		case "ENV":
			for k, v := range dockerEnv(fields[1:]) {
				if key := envKey(k, ""); key != k {
					out[key] = expand(v)
				}
			}
		}
	}
	if final == "" {
		return nil, fmt.Errorf("%s: no FROM instruction", name)
	}
	out["base_image"] = final
	return out, nil
}

// phpImageVersion returns the PHP version of an official-style php image
// ("php:8.3-fpm", "docker.io/library/php:8.2.12-fpm-bookworm", "bitnami/php-fpm:8.3").
func phpImageVersion(img string) string {
	ref := img
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	repo, tag, ok := strings.Cut(ref[strings.LastIndexByte(ref, '/')+1:], ":")
	if !ok || !strings.HasPrefix(repo, "php") {
		return ""
	}
	return phpVersionTag.FindString(tag)
}

// dockerInstructions joins continuation lines and drops comments.
func dockerInstructions(data []byte) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") {
			continue
		}
		if strings.HasSuffix(t, `\`) {
			cur.WriteString(strings.TrimSuffix(t, `\`))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(t)
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// dockerEnv reads ENV's two forms: "ENV K=V K2=V2" and the legacy "ENV K V".
func dockerEnv(fields []string) map[string]string {
	out := map[string]string{}
	if len(fields) >= 2 && !strings.Contains(fields[0], "=") {
		out[fields[0]] = strings.Trim(strings.Join(fields[1:], " "), `"'`)
		return out
	}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			out[k] = strings.Trim(v, `"'`)
		}
	}
	return out
}

// secretKey matches keys whose values must never be copied into a report.
var secretKey = regexp.MustCompile(`(?i)(passw|passwd|secret|token|api[_.-]?key|private[_.-]?key|credential|auth)`)

// isSecret looks at the key's last part only: "global.servers.log_credentials"
// is a switch, "env.DB_PASSWORD" a secret.
func isSecret(key string) bool {
	last := key
	if i := strings.LastIndexAny(key, ".["); i >= 0 {
		last = key[i+1:]
	}
	return secretKey.MatchString(last)
}

// isFlag reports values that say nothing secret: presence and booleans.
func isFlag(v string) bool {
	switch strings.ToLower(v) {
	case "", "on", "off", "true", "false", "yes", "no", "0", "1":
		return true
	}
	return false
}

// Redacted replaces the value of a secret key in a change: the change itself
// (a rotation) stays visible, its values do not.
const Redacted = "REDACTED"

// diffKeys emits the keys whose values differ between two versions, sorted.
func diffKeys(old, new map[string]string) [][3]string {
	keys := make([]string, 0, len(old)+len(new))
	for k := range old {
		keys = append(keys, k)
	}
	for k := range new {
		if _, ok := old[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out [][3]string
	for _, k := range keys {
		o, inOld := old[k]
		n, inNew := new[k]
		if inOld && inNew && o == n {
			continue
		}
		if isSecret(k) {
			if inOld && !isFlag(o) {
				o = Redacted
			}
			if inNew && !isFlag(n) {
				n = Redacted
			}
		}
		out = append(out, [3]string{k, o, n})
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
