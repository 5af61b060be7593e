package scan

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/renameio/v2/maybe"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
)

// ProfileCache keeps the profiles of past windows on disk: what a scheduled
// scan needs of a previous day is the aggregate of its hour (counts per
// fingerprint, status and latency bucket, the pool), never its lines again.
// Each hourly scan stores its window's profile, which is a baseline slot of
// the scans at the same clock time on the following days; a slot missing from
// the cache (the first runs, a missed run, another --since) is fetched raw
// and stored too. Memory and disk grow with fingerprints, not requests.
type ProfileCache struct {
	Dir string
}

// profileCacheVersion changes when what a Profile counts changes: an entry of
// another version is counted differently and is not used.
const profileCacheVersion = 2

// storedProfile is a Profile as the cache writes it: with its latency
// histogram and fingerprints, which scan.json leaves out.
type storedProfile struct {
	Version int `json:"version"`
	*Profile
	Latency  detect.Histogram `json:"latency"`
	Clusters []storedCluster  `json:"clusters"`
}

type storedCluster struct {
	Key request.ClusterKey `json:"key"`
	*ClusterProfile
}

// path names a range's entry: its bounds in UTC.
func (c ProfileCache) path(r Range) string {
	const layout = "20060102T150405Z"
	return filepath.Join(c.Dir, r.From.UTC().Format(layout)+"-"+r.To.UTC().Format(layout)+".json")
}

// Load returns the profile of r, false when the cache holds none (or one of
// another version). A damaged entry is an error that names its file.
func (c ProfileCache) Load(r Range) (*Profile, bool, error) {
	path := c.path(r)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("profile cache: %w", err)
	}
	sp := storedProfile{Profile: newProfile(r)}
	if err := json.Unmarshal(data, &sp); err != nil {
		return nil, false, fmt.Errorf("profile cache %s: %w", path, err)
	}
	if sp.Version != profileCacheVersion {
		return nil, false, nil
	}
	if !sp.From.Equal(r.From) || !sp.To.Equal(r.To) {
		return nil, false, fmt.Errorf("profile cache %s: holds %s to %s, not %s to %s", path,
			sp.From.Format(time.RFC3339), sp.To.Format(time.RFC3339), r.From.Format(time.RFC3339), r.To.Format(time.RFC3339))
	}
	p := sp.Profile
	p.Latency = sp.Latency
	p.Clusters = make(map[request.ClusterKey]*ClusterProfile, len(sp.Clusters))
	for _, cl := range sp.Clusters {
		if cl.ClusterProfile == nil {
			return nil, false, fmt.Errorf("profile cache %s: fingerprint %s without counts", path, cl.Key)
		}
		p.Clusters[cl.Key] = cl.ClusterProfile
	}
	if p.Classes == nil {
		p.Classes = map[request.PathClass]int{}
	}
	return p, true, nil
}

// Save stores p (a finished, covered profile), replacing any entry of its range.
func (c ProfileCache) Save(p *Profile) error {
	if !p.Covered {
		return fmt.Errorf("profile cache: %s to %s is not covered by the evidence: not stored", p.From.Format(time.RFC3339), p.To.Format(time.RFC3339))
	}
	sp := storedProfile{Version: profileCacheVersion, Profile: p, Latency: p.Latency}
	for k, cl := range p.Clusters {
		sp.Clusters = append(sp.Clusters, storedCluster{Key: k, ClusterProfile: cl})
	}
	sort.Slice(sp.Clusters, func(i, j int) bool { return sp.Clusters[i].Key.String() < sp.Clusters[j].Key.String() })
	data, err := json.Marshal(sp)
	if err != nil {
		return fmt.Errorf("profile cache: %w", err)
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("profile cache: %w", err)
	}
	// Written to a temporary file, synced and renamed into place: a scan
	// killed halfway leaves no torn entry.
	path := c.path(p.Range)
	if err := maybe.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("profile cache %s: %w", path, err)
	}
	return nil
}

// Prune removes the entries of ranges that end before t: no scan from now on
// reaches back to them.
func (c ProfileCache) Prune(t time.Time) error {
	entries, err := os.ReadDir(c.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("profile cache: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		from, to, ok := strings.Cut(strings.TrimSuffix(name, ".json"), "-")
		if !ok || !strings.HasSuffix(name, ".json") || from == "" {
			continue
		}
		end, err := time.Parse("20060102T150405Z", to)
		if err != nil || !end.Before(t) {
			continue
		}
		if err := os.Remove(filepath.Join(c.Dir, name)); err != nil {
			return fmt.Errorf("profile cache: %w", err)
		}
	}
	return nil
}
