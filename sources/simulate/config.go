package simulate

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
)

// Paths of the configuration repository's files.
const (
	poolFile   = "php-fpm.d/www.conf"
	caddyFile  = "Caddyfile"
	dockerFile = "Dockerfile"
)

func renderPool(sc *Scenario, c SiteConfig) string {
	return fmt.Sprintf(`; php-fpm pool for MediaWiki (wiki.example.org). Deployed by CI on merge.
[www]
user = www-data
group = www-data

listen = 127.0.0.1:9000
listen.backlog = %d

; dynamic with max_children as a fixed ceiling: php-fpm only counts
; max_children_reached (and logs it) for dynamic pools
pm = dynamic
pm.max_children = %d
pm.start_servers = %d
pm.min_spare_servers = %d
pm.max_spare_servers = %d
pm.max_requests = 1000

; status for the exporter on its own listener: answered even when every worker is busy
pm.status_path = /fpm-status
pm.status_listen = 127.0.0.1:9001
ping.path = /fpm-ping

request_slowlog_timeout = %ds
slowlog = /proc/self/fd/2
catch_workers_output = yes
`, c.Backlog, sc.maxChildren(c), sc.StartServers, sc.MinSpare, sc.MaxSpare, int(sc.SlowlogTimeoutS))
}

func renderCaddyfile(sc *Scenario, c SiteConfig) string {
	var b strings.Builder
	b.WriteString(`{
	order rate_limit before php_fastcgi
	metrics
	log {
		output file /var/log/caddy/caddy.log
		format json
	}
}

wiki.example.org {
	root * /var/www/mediawiki
	encode zstd gzip

	log {
		output file /var/log/caddy/access.log
		format json
	}
`)
	if len(c.Zones) > 0 {
		b.WriteString("\n\trate_limit {\n")
		for _, z := range c.Zones {
			switch z.Name {
			case "link_walk":
				b.WriteString(`		# logged-out red links and Special:WhatLinksHere (title= form), one site-wide bucket
		zone link_walk {
			match {
				not header Cookie *wikiUserID=*
				query title=Special:WhatLinksHere
			}
			match {
				not header Cookie *wikiUserID=*
				query redlink=1
			}
`)
			case "page_tools":
				b.WriteString(`		# logged-out page tools, one site-wide bucket (after the 3 October outage)
		zone page_tools {
			match {
				not header Cookie *wikiUserID=*
				query action=edit action=watch title=Special:CiteThisPage
			}
			match {
				not header Cookie *wikiUserID=*
				path /w/Special:Contributions/* /w/Special:RecentChangesLinked/* /w/Special:WhatLinksHere/* /w/Special:NewItem*
			}
`)
			}
			fmt.Fprintf(&b, "\t\t\tkey    static\n\t\t\tevents %d\n\t\t\twindow %s\n\t\t}\n", z.Events, dur(z.WindowS))
		}
		b.WriteString("\t}\n")
	}
	b.WriteString(`
	# logged-out article views come from MediaWiki's HTML file cache when present
	@filecache {
		path /w/*
		not path /w/Special:*
		not header Cookie *wikiUserID=*
		file {
			root /var/www/cache/html
			try_files {path}.html
		}
	}
	handle @filecache {
		root * /var/www/cache/html
		rewrite * {file_match.relative}
		file_server
	}

	handle /static/* {
		file_server {
			precompressed gzip
		}
	}

`)
	writePHPFastCGI(&b, c, sc)
	return b.String()
}

// writePHPFastCGI ends a site block with its php_fastcgi proxy (health check
// and timeouts as the scenario and the configuration give them) and the
// file server for what PHP does not answer.
func writePHPFastCGI(b *strings.Builder, c SiteConfig, sc *Scenario) {
	b.WriteString("\tphp_fastcgi 127.0.0.1:9000 {\n\t\thealth_uri /healthz.php\n")
	fmt.Fprintf(b, "\t\thealth_interval %s\n\t\thealth_timeout %s\n\t\thealth_fails %d\n\t\tdial_timeout %s\n",
		dur(sc.HealthIntervalS), dur(sc.HealthTimeoutS), sc.HealthFails, dur(sc.DialTimeoutS))
	if c.ReadTimeoutS > 0 {
		fmt.Fprintf(b, "\t\tread_timeout %s\n", dur(c.ReadTimeoutS))
	}
	b.WriteString("\t}\n\tfile_server\n}\n")
}

func dur(s float64) string {
	switch {
	case s >= 60 && s == float64(int(s/60))*60:
		return strconv.Itoa(int(s/60)) + "m"
	case s == float64(int(s)):
		return strconv.Itoa(int(s)) + "s"
	}
	return strconv.FormatFloat(s*1000, 'f', 0, 64) + "ms"
}

func renderDockerfile(c SiteConfig) string {
	return "FROM " + c.Image + `
RUN apt-get update \
 && apt-get install -y --no-install-recommends libicu-dev libzip-dev \
 && docker-php-ext-install intl mysqli opcache calendar \
 && rm -rf /var/lib/apt/lists/*
COPY php-fpm.d/www.conf /usr/local/etc/php-fpm.d/www.conf
`
}

// repoCommit is a commit as written: its hash and what it changed.
type repoCommit struct {
	commit
	hash    string
	before  SiteConfig
	after   SiteConfig
	changes []sources.Change
}

// writeRepo creates dir as a git repository holding the scenario's
// configuration history. Identities, dates (with their zone) and contents are
// fixed, so the hashes are the same on every run.
func writeRepo(ctx context.Context, sc *Scenario, dir string) ([]repoCommit, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("simulate: config repo: %w", err)
	}
	git := func(stdin []byte, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.autocrlf=false",
			"-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1", "TZ=UTC")
		var out, errb bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), &out, &errb
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("simulate: git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
		}
		return strings.TrimSpace(out.String()), nil
	}
	if _, err := git(nil, "init", "-q"); err != nil {
		return nil, err
	}
	// The history is written by one git fast-import, not an add, a commit
	// and a rev-parse per commit (each commit also ran git maintenance):
	// the same objects, so the same hashes, in 4 processes where a
	// scenario of 6 commits took 25 (5.6 s of git's CPU over detect's
	// tests). The working tree and the index are written as a commit
	// leaves them.
	var stream bytes.Buffer
	var cfg SiteConfig
	var x repoExtras
	var out []repoCommit
	for _, cm := range sc.commits {
		before := cfg
		cm.apply(&cfg, &x)
		files := map[string]string{
			poolFile:          renderPool(sc, cfg),
			caddyFile:         renderCaddyfile(sc, cfg),
			dockerFile:        renderDockerfile(cfg),
			"README.md":       "# wiki.example.org configuration\n\n" + strings.Join(x.readme, "\n") + "\n",
			"static/skin.css": strings.Join(x.css, "\n") + "\n",
		}
		if sc.App == AppWordPress {
			files = map[string]string{
				poolFile:                            renderWPPool(sc, cfg),
				caddyFile:                           renderWPCaddyfile(sc, cfg),
				dockerFile:                          renderWPDockerfile(cfg),
				"README.md":                         "# " + wpHost + " configuration\n\n" + strings.Join(x.readme, "\n") + "\n",
				"wp-content/themes/child/style.css": strings.Join(x.css, "\n") + "\n",
			}
		}
		if a := sc.app(); a != nil {
			files = map[string]string{
				poolFile:          renderAppPool(sc, cfg, a),
				caddyFile:         renderAppCaddyfile(sc, cfg, a),
				dockerFile:        renderAppDockerfile(cfg),
				"README.md":       "# " + a.host + " configuration\n\n" + strings.Join(x.readme, "\n") + "\n",
				"public/site.css": strings.Join(x.css, "\n") + "\n",
			}
		}
		if cfg.DeployHook != "" {
			files[deployHookFile] = cfg.DeployHook
		}
		// git commit -m's message ends in a newline; the identity and
		// date (with its zone) are those the commit was made with.
		ident := "ops <ops@example.org> " + strconv.FormatInt(cm.at.Unix(), 10) + " " + cm.at.Format("-0700")
		message := cm.message + "\n"
		fmt.Fprintf(&stream, "commit refs/heads/main\nauthor %s\ncommitter %s\ndata %d\n%s", ident, ident, len(message), message)
		for _, name := range slices.Sorted(maps.Keys(files)) {
			content := files[name]
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, fmt.Errorf("simulate: config repo: %w", err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				return nil, fmt.Errorf("simulate: config repo: %w", err)
			}
			fmt.Fprintf(&stream, "M 100644 inline %s\ndata %d\n%s\n", name, len(content), content)
		}
		out = append(out, repoCommit{commit: cm, before: before, after: cfg})
	}
	stream.WriteString("done\n") // --done: a stream cut short is an error
	// A pack of fewer than 100 objects would be unpacked into loose
	// objects by one more process (fastimport.unpackLimit): it is kept.
	if _, err := git(stream.Bytes(), "-c", "fastimport.unpackLimit=1", "fast-import", "--quiet", "--done"); err != nil {
		return nil, err
	}
	// What git commit leaves besides the objects: the index of HEAD's tree.
	if _, err := git(nil, "read-tree", "HEAD"); err != nil {
		return nil, err
	}
	hashes, err := git(nil, "rev-list", "--reverse", "--first-parent", "HEAD")
	if err != nil {
		return nil, err
	}
	hs := strings.Fields(hashes)
	if len(hs) != len(out) {
		return nil, fmt.Errorf("simulate: config repo: %d commits written, git lists %d", len(out), len(hs))
	}
	for i := range out {
		out[i].hash = hs[i]
		out[i].changes = diffConfig(out[i])
	}
	return out, nil
}

// deployHookFile is the release pipeline's post-deploy script.
const deployHookFile = "deploy/post-deploy.sh"

// diffConfig lists what a commit changed that a change log would record.
func diffConfig(rc repoCommit) []sources.Change {
	if rc.before.Image == "" { // the initial commit creates everything
		return nil
	}
	mk := func(file, key, old, new string) sources.Change {
		return sources.Change{Time: rc.at.UTC(), Source: changes.SourceChangesYAML, Ref: rc.hash, File: file, Key: key,
			Old: old, New: new, Note: rc.message, Author: "ops <ops@example.org>"}
	}
	var cs []sources.Change
	a, b := rc.before, rc.after
	if a.Backlog != b.Backlog {
		cs = append(cs, mk(poolFile, "listen.backlog", strconv.Itoa(a.Backlog), strconv.Itoa(b.Backlog)))
	}
	if a.Image != b.Image {
		cs = append(cs, mk(dockerFile, "FROM", a.Image, b.Image))
	}
	if a.DeployHook != b.DeployHook {
		// A script, not a setting: a change log records the file only,
		// as git names a file it added.
		added := ""
		if a.DeployHook == "" {
			added = "added"
		}
		cs = append(cs, mk(deployHookFile, "", "", added))
	}
	if a.MaxChildren != b.MaxChildren {
		cs = append(cs, mk(poolFile, "pm.max_children", strconv.Itoa(a.MaxChildren), strconv.Itoa(b.MaxChildren)))
	}
	if a.ReadTimeoutS != b.ReadTimeoutS {
		cs = append(cs, mk(caddyFile, "php_fastcgi.read_timeout", dur(a.ReadTimeoutS), dur(b.ReadTimeoutS)))
	}
	for _, z := range b.Zones {
		found := false
		for _, y := range a.Zones {
			found = found || y.Name == z.Name
		}
		if !found {
			cs = append(cs, mk(caddyFile, "rate_limit.zone."+z.Name, "",
				fmt.Sprintf("events %d window %s key static", z.Events, dur(z.WindowS))))
		}
	}
	return cs
}

// writeChanges writes changes/changes.yaml: the deploy log the team keeps.
func writeChanges(path string, commits []repoCommit) (int, error) {
	var cs []sources.Change
	for _, rc := range commits {
		cs = append(cs, rc.changes...)
	}
	if err := changes.Write(path, cs); err != nil {
		return 0, fmt.Errorf("simulate: %w", err)
	}
	return len(cs), nil
}
