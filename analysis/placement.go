package analysis

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/rules"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/accesslog"
)

// Placing the proposed zones in the operator's Caddyfile: one path for
// `rules --caddyfile` (a Caddyfile the user names) and `analyze` (the
// Caddyfile of the configuration repository in the evidence). The site block
// is the one that served the logged requests (rules.PlaceInServingSite, fed
// with the Host headers the access log holds), and Caddy's adapter checks
// the result.

// Files analyze writes beside rules.caddy when it placed the zones.
const (
	// PlacedCaddyfile is the configuration repository's Caddyfile with the
	// zones placed in it.
	PlacedCaddyfile = "Caddyfile.rate_limit"
	// PlacedDiff is the change from that Caddyfile to PlacedCaddyfile, as a
	// unified diff.
	PlacedDiff = "Caddyfile.rate_limit.diff"
)

// PlaceZones places prop's rate_limit block in src (a Caddyfile named
// filename): in the site block whose address is site, or, when site is "",
// in the one that served the requests d loaded. The result is checked by
// Caddy's adapter (rules.PlaceInServingSite).
func (d *Detected) PlaceZones(ctx context.Context, prop *rules.Proposal, src []byte, filename, site string) (*rules.Placement, error) {
	var zones []string
	for _, r := range prop.Rules {
		zones = append(zones, r.Name)
	}
	var hosts map[string]int
	if site == "" {
		var err error
		if hosts, err = LoggedHosts(ctx, d.Loaded.Requests); err != nil {
			return nil, err
		}
	}
	return rules.PlaceInServingSite(src, filename, prop.Block, zones, site, hosts)
}

// LoggedHosts counts the kept requests by the Host header Caddy logged
// (request.host): which site block served them (rules.PlaceInServingSite).
func LoggedHosts(ctx context.Context, spill *accesslog.Spill) (map[string]int, error) {
	if spill == nil {
		return nil, nil
	}
	hosts := map[string]int{}
	err := spill.Read(ctx, func(batch []sources.Request) error {
		for i := range batch {
			hosts[batch[i].Host]++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("counting the logged Host headers: %w", err)
	}
	delete(hosts, "")
	return hosts, nil
}

// placeInConfigRepo places prop's zones in the Caddyfile of the
// configuration repositories d read, and says where (or why not) in the
// report's terms. text is the placed Caddyfile and diff the change, both ""
// when nothing was placed. Nothing to place gives a nil placement.
func (d *Detected) placeInConfigRepo(ctx context.Context, prop *rules.Proposal) (rp *report.RulesPlacement, text, diff string) {
	if prop.Block == "" {
		return nil, "", ""
	}
	found, err := caddyfilesIn(d.Loaded.ConfigRepos)
	notPlaced := func(rp *report.RulesPlacement, why prose.Text) *report.RulesPlacement {
		rp.NotPlaced, rp.NotPlacedText = why.String(), why
		return rp
	}
	switch {
	case err != nil:
		return notPlaced(&report.RulesPlacement{}, prose.Plainly(err.Error())), "", ""
	case len(found) == 0:
		return notPlaced(&report.RulesPlacement{}, rules.NoCaddyfileToPlaceIn()), "", ""
	case len(found) > 1:
		var names []string
		for _, f := range found {
			names = append(names, f.name)
		}
		return notPlaced(&report.RulesPlacement{}, rules.SeveralCaddyfiles(names)), "", ""
	}
	cf := found[0]
	rp = &report.RulesPlacement{Caddyfile: cf.name}
	src, err := os.ReadFile(cf.path)
	if err != nil {
		return notPlaced(rp, rules.UnreadableCaddyfile(cf.name, err)), "", ""
	}
	// Placed under its path on disk, so that Caddy resolves its imports
	// beside it; the report names it as the repository does.
	pl, err := d.PlaceZones(ctx, prop, src, cf.path, "")
	if err != nil {
		return notPlaced(rp, prose.Plainly(strings.ReplaceAll(err.Error(), cf.path, cf.name))), "", ""
	}
	rp.Why = strings.ReplaceAll(pl.Why, cf.path, cf.name)
	rp.Site, rp.Line, rp.Placed, rp.Diff = pl.Site, pl.Line, PlacedCaddyfile, PlacedDiff
	if pl.Check != nil {
		for _, w := range pl.Check.Warnings {
			rp.CaddyWarnings = append(rp.CaddyWarnings, strings.ReplaceAll(w, cf.path, cf.name))
		}
	}
	return rp, pl.Caddyfile, rules.UnifiedDiff(cf.name, PlacedCaddyfile, string(src), pl.Caddyfile)
}

// foundCaddyfile is a Caddyfile in a configuration repository: its path on
// disk and its name in the repository (the repository's directory first).
type foundCaddyfile struct{ path, name string }

// caddyfilesIn lists the files named Caddyfile in the working trees of
// repos, in name order.
func caddyfilesIn(repos []string) ([]foundCaddyfile, error) {
	var out []foundCaddyfile
	for _, repo := range repos {
		err := filepath.WalkDir(repo, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() && e.Name() == ".git" {
				return fs.SkipDir
			}
			if e.Type().IsRegular() && e.Name() == "Caddyfile" {
				rel, err := filepath.Rel(filepath.Dir(repo), path)
				if err != nil {
					return err
				}
				out = append(out, foundCaddyfile{path: path, name: filepath.ToSlash(rel)})
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("looking for the Caddyfile in %s: %w", repo, err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}
