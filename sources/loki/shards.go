package loki

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/aftermath-forensics/aftermath/sources/duration"
	"github.com/aftermath-forensics/aftermath/sources/loki/internal/logql"
)

// Loki's bytes limits (max_query_bytes_read, max_querier_bytes_read) weigh
// a query by the bytes its stream selector's streams hold in its range, as
// its index says, before any filter. A query is first split in time
// (learnBytesLimit); when one step of it still reads too much, the only
// narrower query left is one over fewer streams. So a metric query whose
// outermost operation is a sum over one stream selector is run once per
// group of streams (a label's values, =~"a|b", from /series over the
// query's range) and the groups' answers summed: each stream's lines
// land in exactly one group, and a sum of per-stream aggregations is the
// same whichever streams it is summed in. A group still refused is halved
// by its own most varied label, down to one stream; a stream that alone is
// too much for one step cannot be had, and Loki's refusal, naming it, is
// the error. Loki's automatic stream sharding (__stream_shard__) makes its
// pieces streams of their own, so they are halved like any other.

// sumOverSelector is a metric query cut around its one stream selector:
// Before + a selector + After is the query.
type sumOverSelector struct {
	before, sel, after string
	// lookback is how far before an evaluation time its range reaches
	// (the range plus its offset).
	lookback time.Duration
}

// vectorAggregations are LogQL's vector aggregations: inside the outer
// sum, any but sum mixes streams in a way a sum of groups would not
// reproduce (max of a group is not a part of the max of all).
var vectorAggregations = map[string]bool{
	"avg": true, "min": true, "max": true, "count": true, "stddev": true, "stdvar": true,
	"topk": true, "bottomk": true, "sort": true, "sort_desc": true, "approx_topk": true,
}

// rangeRE finds a range aggregation's range and offset ("[1m] offset 1ns").
var rangeRE = regexp.MustCompile(`\[\s*([0-9][0-9a-zµ.]*)\s*\](?:\s*offset\s+([0-9][0-9a-zµ.]*))?`)

// splitSumQuery cuts query around its stream selector when the query is
// a sum (by or without labels, or neither) of range aggregations over
// exactly one selector, with no other vector aggregation inside: then
// summing its answers over disjoint groups of streams gives its answer.
func splitSumQuery(query string) (sumOverSelector, bool) {
	q := strings.TrimSpace(query)
	var idents []string // identifiers outside quotes, in order
	selStart, selEnd := -1, -1
	depth, sumEnd := 0, -1
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == '"':
			for i++; i < len(q) && q[i] != '"'; i++ {
				if q[i] == '\\' {
					i++
				}
			}
		case c == '`':
			for i++; i < len(q) && q[i] != '`'; i++ {
			}
		case c == '{':
			if selStart >= 0 {
				return sumOverSelector{}, false // a second selector
			}
			selStart = i
			for i++; i < len(q) && q[i] != '}'; i++ {
				switch q[i] {
				case '"':
					for i++; i < len(q) && q[i] != '"'; i++ {
						if q[i] == '\\' {
							i++
						}
					}
				case '`':
					for i++; i < len(q) && q[i] != '`'; i++ {
					}
				}
			}
			if i >= len(q) {
				return sumOverSelector{}, false
			}
			selEnd = i + 1
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 && sumEnd < 0 && selStart >= 0 {
				sumEnd = i + 1 // the sum's own parentheses close here
			}
		case c == '_' || unicode.IsLetter(rune(c)):
			j := i
			for j < len(q) && (q[j] == '_' || unicode.IsLetter(rune(q[j])) || unicode.IsDigit(rune(q[j]))) {
				j++
			}
			idents = append(idents, q[i:j])
			i = j - 1
		}
	}
	if selStart < 0 || sumEnd < 0 || len(idents) == 0 || idents[0] != "sum" {
		return sumOverSelector{}, false
	}
	for _, id := range idents[1:] {
		if vectorAggregations[id] {
			return sumOverSelector{}, false
		}
	}
	// After the sum's parentheses only its grouping may follow.
	if rest := strings.TrimSpace(q[sumEnd:]); rest != "" {
		if !(strings.HasPrefix(rest, "by") || strings.HasPrefix(rest, "without")) || !strings.HasSuffix(rest, ")") || strings.Count(rest, "(") != 1 {
			return sumOverSelector{}, false
		}
	}
	s := sumOverSelector{before: q[:selStart], sel: q[selStart:selEnd], after: q[selEnd:]}
	m := rangeRE.FindAllStringSubmatch(blankQuoted(s.after), -1)
	if len(m) != 1 {
		return sumOverSelector{}, false
	}
	rng, err := duration.Parse(m[0][1])
	if err != nil || rng <= 0 {
		return sumOverSelector{}, false
	}
	s.lookback = rng
	if m[0][2] != "" {
		off, err := duration.Parse(m[0][2])
		if err != nil {
			return sumOverSelector{}, false
		}
		s.lookback += max(off, 0)
	}
	return s, true
}

// streamGroup is some of a selector's streams and the selector that
// selects exactly them among those.
type streamGroup struct {
	sel     string
	streams []map[string]string
}

// blankQuoted is s with the insides of its quoted strings blanked, so
// that a pattern finds only LogQL's own syntax ("[0]" in a | json path is
// not a range).
func blankQuoted(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); i++ {
		q := b[i]
		if q != '"' && q != '`' {
			continue
		}
		for i++; i < len(b) && b[i] != q; i++ {
			if q == '"' && b[i] == '\\' && i+1 < len(b) {
				b[i] = ' '
				i++
			}
			b[i] = ' '
		}
	}
	return string(b)
}

// halve splits g's streams in two by the values of the label that tells
// most of them apart (a stream without the label has the value ""): the
// sorted values' first half and the rest, each group selected by adding
// name=~"v1|v2" to g's selector. It reports false when every stream of g
// has the same labels (one stream: nothing narrower).
func (g streamGroup) halve() (string, [2]streamGroup, bool) {
	best, bestValues := "", []string(nil)
	for _, name := range labelNames(g.streams) {
		set := map[string]bool{}
		for _, s := range g.streams {
			set[s[name]] = true
		}
		if len(set) > len(bestValues) {
			values := make([]string, 0, len(set))
			for v := range set {
				values = append(values, v)
			}
			sort.Strings(values)
			best, bestValues = name, values
		}
	}
	if len(bestValues) < 2 {
		return "", [2]streamGroup{}, false
	}
	var out [2]streamGroup
	halves := [2][]string{bestValues[:len(bestValues)/2], bestValues[len(bestValues)/2:]}
	for i, values := range halves {
		in := map[string]bool{}
		quoted := make([]string, len(values))
		for j, v := range values {
			in[v] = true
			quoted[j] = regexp.QuoteMeta(v)
		}
		out[i].sel = strings.TrimSuffix(g.sel, "}") + ", " + best + "=~" + strconv.Quote(strings.Join(quoted, "|")) + "}"
		for _, s := range g.streams {
			if in[s[best]] {
				out[i].streams = append(out[i].streams, s)
			}
		}
	}
	return best, out, true
}

// runSharded runs query, which Loki refused (refusal) for the bytes it
// reads evaluated over [from, to], once per group of its selector's
// streams, run answering each group's query; a group refused for its
// bytes is halved again. It returns refusal when query is not a sum over
// one selector, or when one stream alone is refused (naming it).
func (c *Client) runSharded(ctx context.Context, query string, from, to time.Time, m *meter, refusal error, run func(q string) error) error {
	s, ok := splitSumQuery(query)
	if !ok {
		return refusal
	}
	streams, err := c.series(ctx, from.Add(-s.lookback), to.Add(time.Nanosecond), []string{s.sel}, m)
	if err != nil {
		return fmt.Errorf("listing streams to split a query Loki refused for its bytes: %w (refused: %w)", err, refusal)
	}
	var walk func(g streamGroup, refusal error) error
	walk = func(g streamGroup, refusal error) error {
		name, halves, ok := g.halve()
		if !ok {
			stream := "no stream"
			if len(g.streams) > 0 {
				stream = "stream " + logql.LabelsKey(g.streams[0])
			}
			return fmt.Errorf("%s alone, from %s to %s: %w", stream, from.Format(time.RFC3339), to.Format(time.RFC3339), refusal)
		}
		c.noteShards(name, refusal)
		for _, h := range halves {
			err := run(s.before + h.sel + s.after)
			if bytesLimitOf(err) != nil && ctx.Err() == nil {
				err = walk(h, err)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	return walk(streamGroup{sel: s.sel, streams: streams}, refusal)
}

// noteShards records, once per label, that queries were split by its
// values because a single step still read too many bytes.
func (c *Client) noteShards(name string, refusal error) {
	c.learnOnce(fmt.Sprintf("queries split by the values of label %s where one step still read too many bytes", name), refusal)
}

// learnOnce records a limit learned from Loki's refusal, as "what was done:
// Loki said ...", once per what was done.
func (c *Client) learnOnce(what string, refusal error) {
	var api *APIError
	said := refusal.Error()
	if errors.As(refusal, &api) {
		said = api.Message
	}
	c.limits.mu.Lock()
	defer c.limits.mu.Unlock()
	for _, l := range c.limits.learned {
		if strings.HasPrefix(l, what+":") {
			return
		}
	}
	c.limits.learned = append(c.limits.learned, fmt.Sprintf("%s: Loki said %q", what, said))
}

// matrixSharded answers the matrix of query over [start, end] at step,
// refused for its bytes, from the groups of its streams (runSharded),
// summing the groups' values per series and step.
func (c *Client) matrixSharded(ctx context.Context, query string, start, end time.Time, step time.Duration, m *meter, refusal error) ([]matrixResult, error) {
	sum := matrixSum{}
	err := c.runSharded(ctx, query, start, end, m, refusal, func(q string) error {
		res, err := c.matrixCall(ctx, q, start, end, step, m)
		if err != nil {
			return err
		}
		sum.add(res)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sum.results(), nil
}

// vectorSharded answers the instant vector of query at t, refused for its
// bytes, from the groups of its streams, summed by labels.
func (c *Client) vectorSharded(ctx context.Context, query string, t time.Time, m *meter, refusal error) ([]Sample, error) {
	var out []Sample
	err := c.runSharded(ctx, query, t, t, m, refusal, func(q string) error {
		res, err := c.vector(ctx, q, t, m)
		if err == nil {
			out = sumSamples(out, res)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels < out[j].Labels })
	return out, nil
}
