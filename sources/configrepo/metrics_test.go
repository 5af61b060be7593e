package configrepo

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
)

var scrape0 = time.Date(2026, 10, 2, 23, 40, 0, 0, kst)

// series builds samples 15 s apart from scrape0.
func series(labels string, vals ...float64) changes.Series {
	s := changes.Series{Labels: labels}
	for i, v := range vals {
		s.Points = append(s.Points, changes.Point{T: scrape0.Add(time.Duration(i) * 15 * time.Second), V: v})
	}
	return s
}

// uptime builds a phpfpm_start_since series: seconds since start, restarting
// (to restartUp seconds of uptime) at sample index restartAt (-1: never).
func uptime(labels string, n, restartAt int, restartUp float64) changes.Series {
	s := changes.Series{Labels: labels}
	up := 86400.0
	for i := 0; i < n; i++ {
		if i == restartAt {
			up = restartUp
		} else if i > 0 {
			up += 15
		}
		s.Points = append(s.Points, changes.Point{T: scrape0.Add(time.Duration(i) * 15 * time.Second), V: up})
	}
	return s
}

func TestFromMetrics(t *testing.T) {
	const inst = `{instance="web1:9180"}`
	type want struct {
		key, old, new string
		at            time.Time
	}
	at := func(i int) time.Time { return scrape0.Add(time.Duration(i) * 15 * time.Second) }
	tests := []struct {
		name                string
		queueLen, procs, up []changes.Series
		want                []want
	}{
		{"backlog step", []changes.Series{series(inst, 511, 511, 511, 4096, 4096, 4096)}, nil, nil,
			[]want{{"listen.backlog", "511", "4096", at(3)}}},
		{"one odd sample is not a step", []changes.Series{series(inst, 511, 511, 0, 511, 511)}, nil, nil, nil},
		{"step on the last sample counts", []changes.Series{series(inst, 4096, 4096, 64)}, nil, nil,
			[]want{{"listen.backlog", "4096", "64", at(2)}}},
		{"NaN gaps are ignored", []changes.Series{series(inst, 511, math.NaN(), 511, 4096, 4096)}, nil, nil,
			[]want{{"listen.backlog", "511", "4096", at(3)}}},
		{"restart: at sample time minus uptime", nil, nil, []changes.Series{uptime(inst, 8, 4, 7)},
			[]want{{changes.KeyRestart, "", "", at(4).Add(-7 * time.Second)}}},
		{"steady uptime is no restart", nil, nil, []changes.Series{uptime(inst, 8, -1, 0)}, nil},
		{"pool shrinks across a restart", nil,
			[]changes.Series{series(`{instance="web1:9180",pool="www"}`, 16, 16, 16, 16, 8, 8, 8, 8)},
			[]changes.Series{uptime(inst, 8, 4, 5)},
			[]want{{changes.KeyRestart, "", "", at(4).Add(-5 * time.Second)}, {"pm.max_children", "16", "8", at(4).Add(-5 * time.Second)}}},
		{"dynamic pool varies between restarts: no step", nil,
			[]changes.Series{series(inst, 5, 9, 16, 7, 12, 5, 16, 9)},
			[]changes.Series{uptime(inst, 8, -1, 0)}, nil},
		{"static pool without restart data: plateau step", nil,
			[]changes.Series{series(inst, 16, 16, 16, 32, 32, 32)}, nil,
			[]want{{"pm.max_children", "16", "32", at(3)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := changes.FromMetrics(tt.queueLen, tt.procs, tt.up)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d changes, want %d:\n%s", len(got), len(tt.want), dump(got))
			}
			for i, w := range tt.want {
				c := got[i]
				if c.Key != w.key || c.Old != w.old || c.New != w.new || !c.Time.Equal(w.at) {
					t.Errorf("change %d = %s %q -> %q at %v, want %s %q -> %q at %v", i, c.Key, c.Old, c.New, c.Time, w.key, w.old, w.new, w.at)
				}
				if c.Source != changes.SourceMetrics || !strings.Contains(c.Ref, "phpfpm_") || c.Note == "" {
					t.Errorf("change %d: source %q ref %q note %q", i, c.Source, c.Ref, c.Note)
				}
			}
		})
	}
}

func TestMerge(t *testing.T) {
	commitT := time.Date(2026, 10, 2, 23, 40, 0, 0, kst)
	deployT := time.Date(2026, 10, 2, 23, 48, 0, 0, kst)
	git := sources.Change{Time: commitT, Source: changes.SourceGit, Ref: "9d78ccbea301e57b510ff3f93c1312f5e6a9a843", File: "www.conf",
		Key: "listen.backlog", Old: "511", New: "4096", Note: "Bump PHP to 8.3", Author: "Wiki Ops <ops@wiki.test>"}
	metric := sources.Change{Time: deployT, Source: changes.SourceMetrics, Ref: `phpfpm_listen_queue_length{instance="web1"}`,
		Key: "listen.backlog", Old: "511", New: "4096.0", Note: "stepped"}
	logged := sources.Change{Time: deployT.Add(-2 * time.Minute), Source: changes.SourceChangesYAML, Ref: "deploy-41",
		Key: "listen.backlog", New: "4096", Note: "PHP 8.3 rollout"}
	css := sources.Change{Time: commitT, Source: changes.SourceGit, Ref: "abc1234", File: "skins/site.css"}
	restart := sources.Change{Time: deployT, Source: changes.SourceMetrics, Ref: "phpfpm_start_since", Key: changes.KeyRestart}
	at := func(c sources.Change, d time.Duration) sources.Change { c.Time = c.Time.Add(d); return c }
	val := func(c sources.Change, v string) sources.Change { c.New = v; return c }

	tests := []struct {
		name    string
		in      [][]sources.Change
		n       int
		source  string // of the listen.backlog change
		time    time.Time
		ref     string
		noteHas []string
	}{
		{"commit and its metric step are one change, at the deploy", [][]sources.Change{{git, css}, {metric, restart}}, 3,
			"git+metrics", deployT, git.Ref, []string{"Bump PHP", "metrics: stepped"}},
		{"three sources", [][]sources.Change{{metric}, {logged}, {git}}, 1,
			"git+changes.yaml+metrics", deployT, git.Ref, []string{"Bump PHP", "changes.yaml: PHP 8.3 rollout", "metrics: stepped"}},
		{"change log dates the commit when no metric", [][]sources.Change{{git}, {logged}}, 1,
			"git+changes.yaml", logged.Time, git.Ref, nil},
		{"metric-only change stays", [][]sources.Change{{metric}}, 1, changes.SourceMetrics, deployT, metric.Ref, nil},
		{"different new value: two changes", [][]sources.Change{{git}, {val(metric, "2048")}}, 2, changes.SourceGit, commitT, git.Ref, nil},
		{"too far apart: two changes", [][]sources.Change{{git}, {at(metric, 7*time.Hour)}}, 2, changes.SourceGit, commitT, git.Ref, nil},
		{"exact duplicates dropped", [][]sources.Change{{git, css}, {git}}, 2, changes.SourceGit, commitT, git.Ref, nil},
		{"the same source does not confirm itself", [][]sources.Change{{git}, {at(git, time.Hour)}}, 2, changes.SourceGit, commitT, git.Ref, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := changes.Merge(tt.in...)
			if len(got) != tt.n {
				t.Fatalf("got %d changes, want %d:\n%s", len(got), tt.n, dump(got))
			}
			var c *sources.Change
			for i := range got {
				if got[i].Key == "listen.backlog" {
					c = &got[i]
					break
				}
			}
			if c == nil {
				t.Fatal("no listen.backlog change")
			}
			if c.Source != tt.source || !c.Time.Equal(tt.time) || c.Ref != tt.ref {
				t.Errorf("got source %q time %v ref %q, want %q %v %q", c.Source, c.Time, c.Ref, tt.source, tt.time, tt.ref)
			}
			if tt.source != changes.SourceMetrics && strings.Contains(tt.source, changes.SourceGit) && (c.File != "www.conf" || c.Author == "" || c.Old != "511") {
				t.Errorf("commit fields lost: %+v", c)
			}
			for _, s := range tt.noteHas {
				if !strings.Contains(c.Note, s) {
					t.Errorf("note %q lacks %q", c.Note, s)
				}
			}
			for i := 1; i < len(got); i++ {
				if got[i].Time.Before(got[i-1].Time) {
					t.Errorf("not sorted by time")
				}
			}
		})
	}
}
