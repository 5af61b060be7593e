package livetest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// Crawl is the simulator's reference crawl (crawler-backlog, seed 1) with
// BaselineHours of ordinary traffic before its window, the incident the live
// path's end-to-end tests serve from the fakes: simulated once, by the first
// test that opens it, into a directory of its own under *Under (the system's
// temporary directory when Under is nil or empty). Its gzipped files are
// stored uncompressed (simulate.Options.StoredGzip): tests read them many
// times and throw them away. Remove deletes it (a TestMain's job). Tests
// must not write into it.
type Crawl struct {
	BaselineHours float64
	Under         *string

	once sync.Once
	dir  string
	err  error
}

// Open is the crawl's bundle, simulated on the first call.
func (c *Crawl) Open(t testing.TB) *bundle.Bundle {
	t.Helper()
	c.once.Do(func() {
		under := ""
		if c.Under != nil {
			under = *c.Under
		}
		if c.dir, c.err = os.MkdirTemp(under, "aftermath-live-sim-"); c.err != nil {
			return
		}
		_, c.err = simulate.Run(context.Background(), simulate.Options{Scenario: "crawler-backlog", Seed: 1, BaselineHours: c.BaselineHours, Out: filepath.Join(c.dir, "b"), StoredGzip: true})
	})
	if c.err != nil {
		t.Fatal(c.err)
	}
	b, err := bundle.Open(filepath.Join(c.dir, "b"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Remove deletes the crawl's directory, if it was simulated.
func (c *Crawl) Remove() {
	if c.dir != "" {
		os.RemoveAll(c.dir)
	}
}
