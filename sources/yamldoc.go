package sources

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// DecodeYAML decodes a YAML document written by hand (bundle.yaml, the site
// section of aftermath.yaml, changes.yaml) into out, a pointer to a struct
// with yaml tags. It is lenient where people are and strict where a number
// would be wrong:
//   - a key out does not know is a note, not an error: a warning when it is
//     a near miss ("file:line: unknown key "worker" in site, ignored (did you
//     mean "workers"?)"), info otherwise (people keep notes there);
//   - a time without a zone ("2026-10-02 23:48", "2026-10-02T23:48:00") is
//     in loc, the document's time zone (an error when loc is nil);
//   - a value of the wrong type is an error naming the file, the line and the
//     key in the user's words ("site.workers: "four" is not a whole number"),
//     never a Go type.
//
// An empty document decodes to nothing, without error.
func DecodeYAML(file string, data []byte, out any, loc *time.Location) ([]QualityNote, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlSyntaxError(file, err)
	}
	if len(root.Content) == 0 {
		return nil, nil
	}
	doc := root.Content[0]
	w := &yamlWalker{file: file, loc: loc}
	w.walk(doc, reflect.TypeOf(out).Elem(), "")
	if len(w.errs) > 0 {
		return w.notes, errors.New(strings.Join(w.errs, "\n"))
	}
	if err := doc.Decode(out); err != nil {
		return w.notes, yamlTypeError(file, err, w.paths)
	}
	return w.notes, nil
}

// ParseTime reads a time as people write it: RFC 3339 ("2026-10-03T02:00:00+09:00",
// "...Z"), or the same without a zone, with a space instead of the T, or
// without seconds ("2026-10-02 23:48"), which is then in loc. A time without
// a zone and a nil loc is an error that says to add one.
func ParseTime(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04Z07:00", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04Z07:00", "2006-01-02 15:04:05.999999999Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04", "2006-01-02 15:04"} {
		if _, err := time.Parse(layout, s); err == nil {
			if loc == nil {
				return time.Time{}, fmt.Errorf("%q has no time zone: add one (e.g. %s+09:00 or Z), or give the time zone (--tz, or timezone: in bundle.yaml)", s, strings.Replace(s, " ", "T", 1))
			}
			t, _ := time.ParseInLocation(layout, s, loc)
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time: write it as 2026-10-03T02:00:00+09:00 (RFC 3339), or 2026-10-03 02:00 in the time zone given", s)
}

var (
	timeType = reflect.TypeOf(time.Time{})
)

type yamlWalker struct {
	file  string
	loc   *time.Location
	notes []QualityNote
	errs  []string
	// paths maps a line to the key written on it, for type errors.
	paths map[int]string
}

func (w *yamlWalker) at(line int) string { return w.file + ":" + strconv.Itoa(line) }

// walk checks node n against type t (at the key path p): unknown keys become
// warnings and are removed, times get their zone.
func (w *yamlWalker) walk(n *yaml.Node, t reflect.Type, p string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		return
	}
	if w.paths == nil {
		w.paths = map[int]string{}
	}
	if p != "" {
		w.paths[n.Line] = p
	}
	switch {
	case t == timeType:
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
			return
		}
		tm, err := ParseTime(n.Value, w.loc)
		if err != nil {
			w.errs = append(w.errs, fmt.Sprintf("%s: %s: %v", w.at(n.Line), p, err))
			return
		}
		n.Value, n.Tag, n.Style = tm.Format(time.RFC3339Nano), "!!timestamp", 0
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return
		}
		fields := yamlFields(t)
		if _, open := fields[anyKey]; open {
			// An inline map takes every key (Prometheus' http_headers).
			return
		}
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				// A near miss is a fact the user meant to give and that is
				// lost: a warning. Any other key is a note kept beside the
				// facts (contents, note, site.app): info.
				sev := SeverityInfo
				near := nearest(k.Value, fields)
				if near != "" {
					sev = SeverityWarning
				}
				w.notes = append(w.notes, Note("input", sev, Messages.Say("input.unknown_key", struct{ At, Key, Path, Near string }{
					w.at(k.Line), k.Value, p, near})))
				continue
			}
			w.walk(v, ft, join(p, k.Value))
			kept = append(kept, k, v)
		}
		n.Content = kept
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			w.walk(c, t.Elem(), fmt.Sprintf("%s[%d]", p, i+1))
		}
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			w.walk(n.Content[i+1], t.Elem(), join(p, n.Content[i].Value))
		}
	}
}

func join(p, k string) string {
	if p == "" {
		return k
	}
	return p + "." + k
}

// anyKey stands in yamlFields' answer for the keys of an inline map: the
// struct takes any key.
const anyKey = "\x00any"

// yamlFields maps the yaml keys of struct t to their types (inline structs
// included; fields tagged "-" left out).
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			if f.Type.Kind() == reflect.Map {
				out[anyKey] = f.Type.Elem()
				continue
			}
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

// nearest is the known key closest to k when it is a near miss: a plural, the
// same key without its unit suffix ("client_timeout" for "client_timeout_s"),
// or a typo: one edit away, two for keys of six letters or more (a swap of
// two letters is two edits: "wrokers"); "" otherwise, so that a short key of
// its own ("note") is not taken for a known one ("site").
func nearest(k string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	norm := strings.ToLower(strings.ReplaceAll(k, "-", "_"))
	for name := range fields {
		if norm == name || strings.TrimSuffix(name, "_s") == norm || strings.TrimSuffix(norm, "s") == name {
			return name
		}
		if d := editDistance(norm, name); d < bestD || (d == bestD && name < best) {
			best, bestD = name, d
		}
	}
	if bestD > 2 || (bestD == 2 && len(norm) < 6) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

var (
	yamlLineRE      = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	yamlUnmarshalRE = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (\\S+)$")
)

// yamlSyntaxError rewrites a YAML syntax error as "file:line: message".
func yamlSyntaxError(file string, err error) error {
	m := err.Error()
	if sm := yamlLineRE.FindStringSubmatch(m); sm != nil {
		return fmt.Errorf("%s:%s: not valid YAML: %s", file, sm[1], sm[2])
	}
	return fmt.Errorf("%s: not valid YAML: %s", file, strings.TrimPrefix(m, "yaml: "))
}

// yamlTypeError rewrites yaml's type errors in the user's words: the
// file, the line, the key, what was written and what was expected.
func yamlTypeError(file string, err error, paths map[int]string) error {
	// A type's own UnmarshalYAML (a duration's) fails with its own error,
	// "line N: ...", which is worded like the others.
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	var out []string
	for _, m := range msgs {
		line := 0
		if sm := yamlLineRE.FindStringSubmatch(m); sm != nil {
			line, _ = strconv.Atoi(sm[1])
			m = sm[2]
		}
		if sm := yamlUnmarshalRE.FindStringSubmatch(m); sm != nil {
			what := "a value of another kind"
			switch goType := strings.TrimPrefix(sm[3], "*"); {
			case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
				what = "a whole number"
			case strings.HasPrefix(goType, "float"):
				what = "a number"
			case goType == "bool":
				what = "true or false"
			case goType == "string":
				what = "text"
			case strings.HasPrefix(goType, "[]"):
				what = "a list"
			case strings.HasPrefix(goType, "map["), strings.Contains(goType, "."):
				what = "a section of keys"
			}
			written := strconv.Quote(sm[2])
			switch sm[1] {
			case "seq":
				written = "a list"
			case "map":
				written = "a section of keys"
			}
			m = fmt.Sprintf("%s is not %s", written, what)
		}
		loc := file
		if line > 0 {
			loc += ":" + strconv.Itoa(line)
		}
		if k := paths[line]; k != "" {
			m = k + ": " + m
		}
		out = append(out, loc+": "+m)
	}
	return errors.New(strings.Join(out, "\n"))
}
