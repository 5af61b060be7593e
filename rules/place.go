package rules

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aryann/difflib"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// Placing the block in the operator's own Caddyfile, as rules.caddy's header
// says to (deploy.go): OrderOption in the global options, the rate_limit
// block at the top of the site's block. The operator's text is kept as it is,
// line for line (no reformatting: the diff shows only what was added), and
// the result is checked by Caddy's own adapter (CheckCaddyfile).

// Placement is a Caddyfile with the block placed in it.
type Placement struct {
	// Caddyfile is the whole new text.
	Caddyfile string
	// Site is the site block's address(es) as written.
	Site string
	// Line is the line of the site block's "{" in the Caddyfile as given:
	// the block goes right after it.
	Line int
	// Why says why that site block was chosen ("--site" when the caller
	// named it): what it does that the others do not.
	Why string
	// AddedOrder says whether OrderOption was added (false: it was there).
	AddedOrder bool
	// Check is what Caddy's adapter made of the result.
	Check *CaddyfileCheck
}

// caddyBlock is one top-level block of a Caddyfile.
type caddyBlock struct {
	keys       []string // addresses (or "(snippet)"), those on the line of its "{"
	open       int      // line of its "{", 1-based
	close      int      // line of its "}"
	directives []string // the first token of each line directly inside it
	orderLines []int    // lines of `order rate_limit ...` (global options)
	orderTexts []string
}

func (b *caddyBlock) has(directive string) bool {
	for _, d := range b.directives {
		if d == directive {
			return true
		}
	}
	return false
}

// topBlocks reads the top-level blocks of a Caddyfile from its tokens.
func topBlocks(src []byte, filename string) ([]caddyBlock, error) {
	toks, err := caddyfile.Tokenize(src, filename)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	var blocks []caddyBlock
	depth, prevEnd := 0, 0
	var pending []caddyfile.Token
	for i, t := range toks {
		first := t.Line > prevEnd
		prevEnd = t.Line + t.NumLineBreaks()
		open, closing := t.Text == "{" && !t.Quoted(), t.Text == "}" && !t.Quoted()
		switch {
		case depth == 0 && open:
			b := caddyBlock{open: t.Line}
			for _, k := range pending {
				if k.Line == t.Line {
					b.keys = append(b.keys, strings.TrimSuffix(k.Text, ","))
				}
			}
			blocks, pending, depth = append(blocks, b), nil, 1
		case depth == 0 && closing:
			return nil, fmt.Errorf("%s:%d: unexpected '}'", filename, t.Line)
		case depth == 0:
			pending = append(pending, t)
		case open:
			depth++
		case closing:
			depth--
			if depth == 0 {
				blocks[len(blocks)-1].close = t.Line
			}
		case depth == 1 && first:
			b := &blocks[len(blocks)-1]
			b.directives = append(b.directives, t.Text)
			if t.Text == "order" && i+1 < len(toks) && toks[i+1].Text == "rate_limit" {
				var words []string
				for j := i; j < len(toks) && toks[j].Line == t.Line; j++ {
					words = append(words, toks[j].Text)
				}
				b.orderLines = append(b.orderLines, t.Line)
				b.orderTexts = append(b.orderTexts, strings.Join(words, " "))
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("%s: unbalanced braces", filename)
	}
	if len(pending) > 0 && len(blocks) == 0 {
		return nil, fmt.Errorf("%s: a site without a block ({ }) around its directives: wrap it in one first", filename)
	}
	return blocks, nil
}

// PlaceInCaddyfile returns src (a Caddyfile named filename) with the global
// option OrderOption and block (a rate_limit block, as Proposal.Block holds
// it) added, and zones the zone names block defines. The block goes into the
// site block whose address is site, or, when site is "", into the site block
// that served the logged requests (PlaceInServingSite, without the Host
// headers). The result must adapt in Caddy with one rate_limit handler
// holding exactly zones, ahead of any rewrite in its server.
func PlaceInCaddyfile(src []byte, filename, block string, zones []string, site string) (*Placement, error) {
	return PlaceInServingSite(src, filename, block, zones, site, nil)
}

// PlaceInServingSite is PlaceInCaddyfile choosing, when site is "", the site
// block that served the logged requests: hosts counts them by the Host header
// the access log holds (request.host; nil when unknown). See servingsite.go
// for how; with two candidates left it refuses and names both.
func PlaceInServingSite(src []byte, filename, block string, zones []string, site string, hosts map[string]int) (*Placement, error) {
	if strings.TrimSpace(block) == "" {
		return nil, errors.New("place: no rate_limit block to place")
	}
	blocks, err := topBlocks(src, filename)
	if err != nil {
		return nil, fmt.Errorf("place: %w", err)
	}
	var global *caddyBlock
	var sites []*caddyBlock
	for i := range blocks {
		b := &blocks[i]
		switch {
		case len(b.keys) == 0 && i == 0:
			global = b
		case len(b.keys) > 0 && (strings.HasPrefix(b.keys[0], "(") || strings.HasPrefix(b.keys[0], "&(")):
			// a snippet or a named route
		default:
			sites = append(sites, b)
		}
	}
	var target *caddyBlock
	names := func(bs []*caddyBlock) string {
		var out []string
		for _, b := range bs {
			out = append(out, strings.Join(b.keys, " "))
		}
		return strings.Join(out, "; ")
	}
	why := "--site"
	if site != "" {
		for _, b := range sites {
			for _, k := range b.keys {
				if k == site {
					target = b
				}
			}
		}
		if target == nil {
			return nil, fmt.Errorf("place: %s has no site block for %q (its sites: %s)", filename, site, names(sites))
		}
	} else {
		parsed, err := parseSites(src, filename)
		if err != nil {
			return nil, fmt.Errorf("place: %w", err)
		}
		chosen, because, err := chooseServingSite(parsed, filename, hosts)
		if err != nil {
			return nil, err
		}
		why = because
		for _, b := range sites {
			if chosen.file == filename && b.open == chosen.lastLine {
				target = b
			}
		}
		if target == nil {
			return nil, fmt.Errorf("place: the site that served the logged requests, %s, is defined in %s:%d, not in %s's own text: add the rate_limit block there by hand", chosen.name(), chosen.file, chosen.line, filename)
		}
	}
	if target.has("rate_limit") {
		return nil, fmt.Errorf("place: the site block %s (line %d) already has a rate_limit block: merge the zones by hand", strings.Join(target.keys, " "), target.open)
	}
	if target.close == target.open {
		return nil, fmt.Errorf("place: the site block %s opens and closes on line %d: put its directives on lines of their own first", strings.Join(target.keys, " "), target.open)
	}
	addOrder := true
	if global != nil {
		for i, text := range global.orderTexts {
			if text != OrderOption {
				return nil, fmt.Errorf("place: %s:%d has %q, but the zones need %q to see the request as the client sent it", filename, global.orderLines[i], text, OrderOption)
			}
			addOrder = false
		}
		if addOrder && global.close == global.open {
			return nil, fmt.Errorf("place: the global options block opens and closes on line %d: put its options on lines of their own first", global.open)
		}
	}

	lines := strings.SplitAfter(string(src), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1]
	}
	if n := len(lines); n > 0 && !strings.HasSuffix(lines[n-1], "\n") {
		lines[n-1] += "\n"
	}
	insert := func(after int, add []string) {
		lines = append(lines[:after], append(add, lines[after:]...)...)
	}
	// The later insertion first, so that the earlier line numbers hold.
	indent := "\t"
	var blockLines []string
	for _, l := range strings.SplitAfter(strings.TrimRight(block, "\n")+"\n", "\n") {
		if l != "" {
			blockLines = append(blockLines, indent+l)
		}
	}
	insert(target.open, blockLines)
	if addOrder {
		if global != nil {
			insert(global.open, []string{indent + OrderOption + "\n"})
		} else {
			insert(0, []string{"{\n", indent + OrderOption + "\n", "}\n", "\n"})
		}
	}
	out := strings.Join(lines, "")
	check, err := CheckCaddyfile([]byte(out), filename, zones)
	if err != nil {
		return nil, err
	}
	return &Placement{Caddyfile: out, Site: strings.Join(target.keys, " "), Line: target.open, Why: why, AddedOrder: addOrder, Check: check}, nil
}

// UnifiedDiff renders the change from a to b as a unified diff with three
// lines of context, for a human to read (and patch(1) to apply).
func UnifiedDiff(nameA, nameB, a, b string) string {
	split := func(s string) []string {
		s = strings.TrimSuffix(s, "\n")
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
	recs := difflib.Diff(split(a), split(b))
	const context = 3
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	// Walk the records, emitting hunks around changed records.
	changed := func(i int) bool { return recs[i].Delta != difflib.Common }
	for i := 0; i < len(recs); {
		if !changed(i) {
			i++
			continue
		}
		start := max(0, i-context)
		end := i
		for j := i; j < len(recs); j++ {
			if changed(j) {
				end = j
			} else if j-end > 2*context {
				break
			}
		}
		end = min(len(recs)-1, end+context)
		// Line numbers at start.
		la, lb := 1, 1
		for j := 0; j < start; j++ {
			if recs[j].Delta != difflib.RightOnly {
				la++
			}
			if recs[j].Delta != difflib.LeftOnly {
				lb++
			}
		}
		na, nb := 0, 0
		var body strings.Builder
		for j := start; j <= end; j++ {
			switch recs[j].Delta {
			case difflib.Common:
				na++
				nb++
				body.WriteString(" " + recs[j].Payload + "\n")
			case difflib.LeftOnly:
				na++
				body.WriteString("-" + recs[j].Payload + "\n")
			case difflib.RightOnly:
				nb++
				body.WriteString("+" + recs[j].Payload + "\n")
			}
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", la, na, lb, nb)
		out.WriteString(body.String())
		i = end + 1
	}
	return out.String()
}

// NoCaddyfileToPlaceIn says that the evidence holds no Caddyfile to place
// the zones in.
func NoCaddyfileToPlaceIn() prose.Text { return Messages.Say("placement.no_caddyfile", nil) }

// SeveralCaddyfiles says that the configuration holds several Caddyfiles
// (names) and the zones were not placed in any.
func SeveralCaddyfiles(names []string) prose.Text { return Messages.Say("placement.several", names) }

// UnreadableCaddyfile says that the Caddyfile name could not be read.
func UnreadableCaddyfile(name string, err error) prose.Text {
	return Messages.Say("placement.unreadable", struct{ Name, Err string }{name, err.Error()})
}
