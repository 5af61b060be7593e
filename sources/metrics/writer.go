package metrics

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"
)

// Writer writes samples as OpenMetrics text with timestamps, the format of a
// bundle's metrics/*.om files, which LoadFile reads back.
//
// OpenMetrics wants the samples of a metric family together, so Writer keeps
// every sample in memory (16 bytes each, plus one entry per series) and
// writes them all at Close: families sorted by name, each declared
// "# TYPE name unknown" (as Prometheus exports stored series: the name is kept
// as is, "_total" or not), series sorted by labels, samples by time, timestamps
// in seconds with millisecond precision, then "# EOF". Samples may therefore
// be given in any order. The output is the same for the same samples.
//
// Writer does not compress; wrap w in a gzip.Writer for .om.gz. It is not
// safe for concurrent use.
type Writer struct {
	w        io.Writer
	byText   map[string]*wseries
	families map[string][]*wseries
	closed   bool
	// keys and text are Sample's scratch: a series is looked up by its
	// text without allocating, and the text made a string only for a new
	// series (a simulated week's samples allocated twice each).
	keys []string
	text []byte
}

type wseries struct {
	text    string // name{label="value",...}
	samples []wsample
}

type wsample struct {
	t int64 // ms
	v float64
}

// NewWriter returns a Writer that writes to w when closed.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w, byText: map[string]*wseries{}, families: map[string][]*wseries{}}
}

// Sample adds one sample. name must be a valid Prometheus metric name
// ([a-zA-Z_:][a-zA-Z0-9_:]*), label names valid label names
// ([a-zA-Z_][a-zA-Z0-9_]*, not __name__), label values valid UTF-8.
// Timestamps are kept to the millisecond.
func (w *Writer) Sample(name string, lbls map[string]string, t time.Time, v float64) error {
	if w.closed {
		return errors.New("metrics: Sample after Close")
	}
	if !validName(name, true) {
		return fmt.Errorf("metrics: invalid metric name %q", name)
	}
	keys := w.keys[:0]
	for k, val := range lbls {
		if !validName(k, false) || k == "__name__" {
			return fmt.Errorf("metrics: %s: invalid label name %q", name, k)
		}
		if !utf8.ValidString(val) {
			return fmt.Errorf("metrics: %s: label %s: value is not valid UTF-8", name, k)
		}
		keys = append(keys, k)
	}
	w.keys = keys
	slices.Sort(keys)
	text := append(w.text[:0], name...)
	if len(keys) > 0 {
		text = append(text, '{')
		for i, k := range keys {
			if i > 0 {
				text = append(text, ',')
			}
			text = append(text, k...)
			text = append(text, `="`...)
			text = appendEscaped(text, lbls[k])
			text = append(text, '"')
		}
		text = append(text, '}')
	}
	w.text = text
	s := w.byText[string(text)] // no string is made for the look-up
	if s == nil {
		s = &wseries{text: string(text)}
		w.byText[s.text] = s
		w.families[name] = append(w.families[name], s)
	}
	s.samples = append(s.samples, wsample{t: t.UnixMilli(), v: v})
	return nil
}

// Close writes everything and "# EOF". It does not close the underlying
// writer. After Close, Sample fails.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	bw := bufio.NewWriterSize(w.w, 64<<10)
	names := make([]string, 0, len(w.families))
	for n := range w.families {
		names = append(names, n)
	}
	sort.Strings(names)
	var line []byte
	for _, n := range names {
		line = append(line[:0], "# TYPE "...)
		line = append(line, n...)
		line = append(line, " unknown\n"...)
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("metrics: write: %w", err)
		}
		fam := w.families[n]
		sort.Slice(fam, func(i, j int) bool { return fam[i].text < fam[j].text })
		for _, s := range fam {
			slices.SortStableFunc(s.samples, func(a, b wsample) int {
				switch {
				case a.t < b.t:
					return -1
				case a.t > b.t:
					return 1
				}
				return 0
			})
			for _, smp := range s.samples {
				line = append(line[:0], s.text...)
				line = append(line, ' ')
				line = appendValue(line, smp.v)
				line = append(line, ' ')
				line = appendSeconds(line, smp.t)
				line = append(line, '\n')
				if _, err := bw.Write(line); err != nil {
					return fmt.Errorf("metrics: write: %w", err)
				}
			}
		}
	}
	if _, err := bw.WriteString("# EOF\n"); err != nil {
		return fmt.Errorf("metrics: write: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("metrics: write: %w", err)
	}
	w.byText, w.families = nil, nil
	return nil
}

// validName checks a legacy Prometheus metric name (colons allowed) or label
// name.
func validName(s string, metric bool) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		ok := c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			(i > 0 && c >= '0' && c <= '9') || (metric && c == ':')
		if !ok {
			return false
		}
	}
	return true
}

// appendEscaped appends a label value escaped as OpenMetrics wants.
func appendEscaped(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendValue formats a sample value: integers without exponent, other
// numbers in the shortest form that reads back exactly.
func appendValue(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendSeconds formats milliseconds as seconds with three decimals.
func appendSeconds(b []byte, ms int64) []byte {
	if ms < 0 {
		b = append(b, '-')
		ms = -ms
	}
	b = strconv.AppendInt(b, ms/1000, 10)
	frac := ms % 1000
	b = append(b, '.', byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	return b
}
