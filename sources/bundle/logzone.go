package bundle

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// timeLocal matches Caddy's time_local, which makes an encoder write the
// host's local time instead of UTC: a Caddyfile subdirective of format
// (format json { time_local }) or the JSON config's "time_local": true.
var timeLocal = regexp.MustCompile(`(^|[\s{])time_local(\s|}|$)|"time_local"\s*:\s*true`)

// CaddyTimeLocal returns the first Caddy configuration under dir/changes
// (a file named Caddyfile*, or caddy*.json, in a configuration repository's
// working tree or beside it) that sets time_local, or "" when none does or
// there is none.
func CaddyTimeLocal(dir string) string {
	found := ""
	root := filepath.Join(dir, ChangesDir)
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found != "" {
			return fs.SkipDir
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		name := strings.ToLower(d.Name())
		if !strings.HasPrefix(name, "caddyfile") && !(strings.HasPrefix(name, "caddy") && strings.HasSuffix(name, ".json")) {
			return nil
		}
		if setsTimeLocal(path) {
			found = path
			return fs.SkipAll
		}
		return nil
	})
	return found
}

// setsTimeLocal reports whether a Caddy configuration file sets time_local
// outside a comment.
func setsTimeLocal(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 && !strings.HasSuffix(strings.ToLower(path), ".json") {
			line = line[:i]
		}
		if timeLocal.MatchString(line) {
			return true
		}
	}
	return false
}

// LogZone decides where the access log's times written without a zone
// (Caddy's console encoder, time_format wall and its kin) are read, and
// says why. Caddy writes UTC unless its configuration sets time_local, so:
// the zone the user gave (--log-tz), else, when a Caddy configuration in
// the bundle (dir, "" for none) sets time_local, the host's local zone,
// taken to be the bundle's timezone (display); else UTC (nil). The display
// zone alone never moves evidence. A time_local configuration without a
// zone to take is read as UTC, and warn says to give one.
func LogZone(dir, given, display string) (loc *time.Location, why, warn string, err error) {
	if given != "" {
		if loc, err = time.LoadLocation(given); err != nil {
			return nil, "", "", fmt.Errorf("--log-tz: %w", err)
		}
		return loc, "--log-tz", "", nil
	}
	if dir == "" {
		return nil, "", "", nil
	}
	cfg := CaddyTimeLocal(dir)
	if cfg == "" {
		return nil, "", "", nil
	}
	if display == "" {
		return nil, "", fmt.Sprintf("%s sets time_local (Caddy writes the host's local time) but no time zone is known: times without a zone are read as UTC; give the host's zone with --log-tz", cfg), nil
	}
	if loc, err = time.LoadLocation(display); err != nil {
		return nil, "", "", fmt.Errorf("time zone %q: %w", display, err)
	}
	return loc, fmt.Sprintf("%s sets time_local: the host's local time, taken to be the bundle's timezone", cfg), "", nil
}
