package rules

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// The profile pass borrows the spill's targets (readClassified): they view
// the decoder's buffer, which later records are read into, so a path
// prefix, an API path or a query value kept without its copy would read
// another request's bytes.
// The profile and the proposal are those of a pass over owned targets, on a
// crawl of special pages (path prefixes) and on one of searches (API paths,
// sampled query values).
func TestProfileKeepsCopiesOfBorrowedTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation in -short mode")
	}
	for _, o := range []simulate.Options{crawlerBacklogHour, wordPressCrawl} {
		t.Run(o.Scenario, func(t *testing.T) {
			in := sharedInput(t, o)
			owned, ownedProp := profileWith(t, in, false)
			borrowed, borrowedProp := profileWith(t, in, true)
			kept := 0
			for _, c := range owned.crawlers {
				for _, ev := range c.Labels {
					kept += len(ev.Prefixes) + len(ev.Paths)
				}
				for _, s := range c.QueryValues {
					kept += len(s.values)
				}
			}
			kept += len(owned.site.Prefixes)
			for _, s := range owned.site.QueryValues {
				kept += len(s.values)
			}
			if kept == 0 {
				t.Fatal("the profile keeps no path prefix, API path or query value: nothing to check")
			}
			if !reflect.DeepEqual(owned, borrowed) {
				t.Errorf("the profile read from borrowed targets differs from the one from owned targets")
				for i := range owned.crawlers {
					if !reflect.DeepEqual(owned.crawlers[i], borrowed.crawlers[i]) {
						t.Errorf("crawler %d: borrowed %+v\nowned %+v", i, borrowed.crawlers[i], owned.crawlers[i])
					}
				}
			}
			if ownedProp != borrowedProp {
				t.Errorf("proposal from borrowed targets:\n%s\nfrom owned:\n%s", borrowedProp, ownedProp)
			}
		})
	}
}

// profileWith runs the profile pass and Propose with the spill's targets
// borrowed or owned, and returns the profile and the proposal as JSON.
func profileWith(t *testing.T, in Input, borrow bool) (*profile, string) {
	t.Helper()
	was := borrowSpillTargets
	borrowSpillTargets = borrow
	defer func() { borrowSpillTargets = was }()
	ctx := context.Background()
	refs, _ := crawlerRefs(in.Findings)
	prof, err := readProfile(ctx, &in, refs)
	if err != nil {
		t.Fatal(err)
	}
	prop, err := Propose(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.MarshalIndent(prop, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return prof, string(js)
}
