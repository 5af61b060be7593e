package lokitest

// The LogQL subset the fake understands.

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
	"time"

	"github.com/valyala/fastjson"
)

type fakeMatcher struct {
	name, op, value string
	re              *regexp.Regexp
}

func (m fakeMatcher) match(v string) bool {
	switch m.op {
	case "=":
		return v == m.value
	case "!=":
		return v != m.value
	case "=~":
		return m.re.MatchString(v)
	default:
		return !m.re.MatchString(v)
	}
}

type fakeStage struct {
	op     string // |=, !=, |~, !~, json, regexp, label, unwrap, label_format, drop
	value  string // the line filter's text, or the label unwrap takes
	re     *lineRegexp
	params []jsonParam // json: each label and the path it reads, in order
	filter []labelCmp  // label: comparisons joined by or/and
	// label_format: each destination label with its template, or the label
	// it renames; drop: the labels dropped.
	formats []labelFormat
	names   []string
}

// labelFormat is one dst=src (rename) or dst="template" of | label_format.
type labelFormat struct {
	dst, rename string
	tmpl        *template.Template
	// memo holds the template's output by the labels it ran on: a template
	// sees only the labels (the fake has no __line__ or __timestamp__) and
	// its functions are pure, so lines with the same labels (a handful of
	// user agents and languages) share one execution. Executing it for each
	// line was most of the fake's time in the pushdown tests.
	memo *templateMemo
	// reads are the labels the template reads (.name), when readsKnown:
	// the memo is keyed by those alone, so a label no template reads (a
	// duration, unique to each line) does not make every line a miss.
	reads      []string
	readsKnown bool
	// numeric is the template evaluated without text/template, when it is
	// one call tree of the numeric functions (numericTemplate).
	numeric func(ls map[string]string) string
}

// templateFields lists the labels a template reads (its .name fields),
// sorted; false when it uses a construct the walk does not know (then
// every label keys the memo).
func templateFields(n parse.Node) ([]string, bool) {
	set := map[string]bool{}
	var walk func(n parse.Node) bool
	walk = func(n parse.Node) bool {
		switch x := n.(type) {
		case nil:
			return true
		case *parse.ListNode:
			if x == nil {
				return true
			}
			for _, c := range x.Nodes {
				if !walk(c) {
					return false
				}
			}
			return true
		case *parse.TextNode, *parse.StringNode, *parse.NumberNode, *parse.BoolNode, *parse.IdentifierNode:
			return true
		case *parse.FieldNode:
			if len(x.Ident) != 1 {
				return false
			}
			set[x.Ident[0]] = true
			return true
		case *parse.ActionNode:
			return walk(x.Pipe)
		case *parse.PipeNode:
			if x == nil {
				return true
			}
			if len(x.Decl) > 0 {
				return false
			}
			for _, c := range x.Cmds {
				if !walk(c) {
					return false
				}
			}
			return true
		case *parse.CommandNode:
			for _, a := range x.Args {
				if !walk(a) {
					return false
				}
			}
			return true
		case *parse.IfNode:
			return walk(x.Pipe) && walk(x.List) && walk(x.ElseList)
		}
		return false
	}
	if !walk(n) {
		return nil, false
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out, true
}

// templateMemo is a template's output (or its failure) by the labels it ran on.
type templateMemo struct {
	mu sync.Mutex
	m  map[string]templateOutput
}

type templateOutput struct {
	s   string
	err bool
}

// maxTemplateMemo bounds a memo: labels that differ on every line (an
// address, a path) would otherwise grow it with the lines.
const maxTemplateMemo = 1 << 14

// execute is the template's output for labels ls, and false when it failed.
func (f *labelFormat) execute(ls map[string]string) (string, bool) {
	if f.numeric != nil {
		return f.numeric(ls), true
	}
	keys := f.reads
	if !f.readsKnown {
		keys = make([]string, 0, len(ls))
		for k := range ls {
			keys = append(keys, k)
		}
		slices.Sort(keys)
	}
	var kb strings.Builder
	for _, k := range keys {
		kb.WriteString(k)
		kb.WriteByte(0)
		kb.WriteString(ls[k])
		kb.WriteByte(0)
	}
	key := kb.String()
	f.memo.mu.Lock()
	o, ok := f.memo.m[key]
	f.memo.mu.Unlock()
	if ok {
		return o.s, !o.err
	}
	var b strings.Builder
	if err := f.tmpl.Execute(&b, ls); err != nil {
		o = templateOutput{err: true}
	} else {
		o = templateOutput{s: b.String()}
	}
	f.memo.mu.Lock()
	if len(f.memo.m) < maxTemplateMemo {
		f.memo.m[key] = o
	}
	f.memo.mu.Unlock()
	return o.s, !o.err
}

// templateFuncs are the template functions of Loki's line_format and
// label_format the fake knows, with Loki's (sprig's) argument order.
var templateFuncs = template.FuncMap{
	"contains":  func(substr, s string) bool { return strings.Contains(s, substr) },
	"hasPrefix": func(prefix, s string) bool { return strings.HasPrefix(s, prefix) },
	"hasSuffix": func(suffix, s string) bool { return strings.HasSuffix(s, suffix) },
	"lower":     strings.ToLower,
	"upper":     strings.ToUpper,
	"trim":      strings.TrimSpace,
	"trunc": func(c int, s string) string {
		if c >= 0 && len(s) > c {
			return s[:c]
		}
		if c < 0 && len(s)+c > 0 {
			return s[len(s)+c:]
		}
		return s
	},
	// Loki's mathematical template functions (sprig's, as Loki's template
	// functions page lists them): float64 converts a label's text as
	// sprig's toFloat64 does, to 0 when it is not a number; the others
	// take any number of operands, converted alike.
	"float64": toFloat64,
	"subf": func(a any, v ...any) float64 {
		x := toFloat64(a)
		for _, b := range v {
			x -= toFloat64(b)
		}
		return x
	},
	"maxf": func(a any, v ...any) float64 {
		x := toFloat64(a)
		for _, b := range v {
			x = math.Max(x, toFloat64(b))
		}
		return x
	},
	"minf": func(a any, v ...any) float64 {
		x := toFloat64(a)
		for _, b := range v {
			x = math.Min(x, toFloat64(b))
		}
		return x
	},
	"ceil":  func(a any) float64 { return math.Ceil(toFloat64(a)) },
	"floor": func(a any) float64 { return math.Floor(toFloat64(a)) },
	"regexReplaceAll": func(re, s, repl string) (string, error) {
		r, err := compiledRegexp(re)
		if err != nil {
			return "", err
		}
		return r.ReplaceAllString(s, repl), nil
	},
}

// toFloat64 is sprig's: a number as it is, a string parsed (0 when it is
// not a number), anything else 0.
func toFloat64(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case string:
		f, err := strconv.ParseFloat(x, 64)
		if err != nil {
			return 0
		}
		return f
	}
	return 0
}

// compiled holds each regexReplaceAll pattern compiled once: a template runs
// once per line, and compiling per line was most of the fake's time.
var compiled sync.Map // pattern -> *regexp.Regexp

func compiledRegexp(re string) (*regexp.Regexp, error) {
	if r, ok := compiled.Load(re); ok {
		return r.(*regexp.Regexp), nil
	}
	r, err := regexp.Compile(re)
	if err != nil {
		return nil, err
	}
	compiled.Store(re, r)
	return r, nil
}

// labelCmp is one comparison of a label filter; join is "or" or "and" with
// the comparison before it (evaluated left to right, as the fake needs).
type labelCmp struct {
	join, name, op string
	str            string
	num            float64
	isNum          bool
	re             *regexp.Regexp
}

// evalFilter applies a label filter: false drops the line; a value that is not a
// number sets __error__ (as Loki's LabelFilterErr) and keeps it.
func evalFilter(cmps []labelCmp, ls map[string]string) (keep bool, errLabel bool) {
	var result bool
	for i, c := range cmps {
		v, has := ls[c.name]
		var ok bool
		if c.isNum {
			if !has {
				ok = false
			} else if x, err := strconv.ParseFloat(v, 64); err != nil {
				errLabel, ok = true, true
			} else {
				switch c.op {
				case ">":
					ok = x > c.num
				case ">=":
					ok = x >= c.num
				case "<":
					ok = x < c.num
				case "<=":
					ok = x <= c.num
				case "==", "=":
					ok = x == c.num
				case "!=":
					ok = x != c.num
				}
			}
		} else {
			switch c.op {
			case "=", "==":
				ok = v == c.str
			case "!=":
				ok = v != c.str
			case "=~":
				ok = c.re.MatchString(v)
			case "!~":
				ok = !c.re.MatchString(v)
			}
		}
		switch {
		case i == 0:
			result = ok
		case c.join == "or":
			result = result || ok
		default:
			result = result && ok
		}
	}
	return result, errLabel
}

// Query is a parsed query.
type Query struct {
	matchers []fakeMatcher
	stages   []fakeStage
	fn       string // "", count_over_time, rate, sum_over_time, bytes_over_time
	rng      time.Duration
	// offset shifts the range back: at t it is (t-rng-offset, t-offset].
	offset time.Duration
	sum    bool
	by     []string
	// text is the query as written (the results cache's key).
	text string
}

// Matches reports whether the query's stream selector selects a stream with
// labels ls.
func (e *Query) Matches(ls map[string]string) bool {
	for _, m := range e.matchers {
		if !m.match(ls[m.name]) {
			return false
		}
	}
	return true
}

// Labels runs the query's pipeline on one line of a stream with labels ls,
// as the fake does when it answers: the labels the line leaves with, false
// when the pipeline drops it.
func (e *Query) Labels(ls map[string]string, line string) (map[string]string, bool) {
	out, _, ok := e.apply(ls, line)
	return out, ok
}

// apply runs the pipeline on one line: false if filtered out; the labels of the
// result (stream labels plus what | json extracted) and, after | unwrap, the
// sample's value.
func (e *Query) apply(ls map[string]string, line string) (map[string]string, float64, bool) {
	out := ls
	// owned: out is a map this call made, which later stages may change in
	// place; the stream's labels (ls) are never changed.
	owned := false
	own := func(extra int) {
		if owned {
			return
		}
		cp := make(map[string]string, len(out)+extra)
		for k, v := range out {
			cp[k] = v
		}
		out, owned = cp, true
	}
	var value float64
	for _, s := range e.stages {
		switch s.op {
		case "|=":
			if !strings.Contains(line, s.value) {
				return nil, 0, false
			}
		case "!=":
			if strings.Contains(line, s.value) {
				return nil, 0, false
			}
		case "|~":
			if !s.re.MatchString(line) {
				return nil, 0, false
			}
		case "!~":
			if s.re.MatchString(line) {
				return nil, 0, false
			}
		case "json":
			out, owned = jsonLabels(out, line, s.params), true
		case "regexp":
			m := s.re.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			own(len(m) - 1)
			regexpLabels(ls, out, m, s.re)
		case "label":
			keep, errLabel := evalFilter(s.filter, out)
			if !keep {
				return nil, 0, false
			}
			if errLabel {
				own(1)
				out["__error__"] = "LabelFilterErr"
			}
		case "label_format":
			// Every format reads the labels as they were before the stage,
			// so out is changed in place only when it is ours and one
			// format runs (it reads before it writes).
			cp := out
			if !owned || len(s.formats) > 1 {
				cp = make(map[string]string, len(out)+len(s.formats))
				for k, v := range out {
					cp[k] = v
				}
			}
			for _, f := range s.formats {
				if f.tmpl == nil {
					cp[f.dst] = out[f.rename]
					delete(cp, f.rename)
					continue
				}
				v, ok := f.execute(out)
				if !ok {
					cp["__error__"] = "TemplateFormatErr"
					continue
				}
				cp[f.dst] = v
			}
			out, owned = cp, true
		case "drop":
			if !slices.ContainsFunc(s.names, func(n string) bool { _, has := out[n]; return has }) {
				continue
			}
			own(0)
			for _, n := range s.names {
				delete(out, n)
			}
		case "unwrap":
			// Loki drops the unwrapped label from the series and marks a value
			// that is not a number with __error__ (SampleExtractionErr).
			v, err := strconv.ParseFloat(out[s.value], 64)
			if _, has := out[s.value]; has || err != nil {
				own(1)
			}
			delete(out, s.value)
			if err != nil {
				out["__error__"] = "SampleExtractionErr"
			}
			value = v
		}
	}
	return out, value, true
}

// regexpLabels extracts | regexp "re" as Loki's RegexpParser does, from m,
// its leftmost match: each named sub-match becomes a label of out
// (suffixed "_extracted" when a stream label has the name). A line that
// does not match is kept with its labels unchanged.
func regexpLabels(stream, out map[string]string, m []string, re *lineRegexp) {
	for i, name := range re.re.SubexpNames() {
		if name == "" {
			continue
		}
		if _, taken := stream[name]; taken {
			name += "_extracted"
		}
		out[name] = m[i]
	}
}

var nonLabel = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// jsonLabels extracts JSON fields as Loki's | json does: nested objects
// flattened with "_", arrays skipped, names sanitized, a name taken by a stream
// label suffixed "_extracted", and __error__ on a line that is not JSON.
//
// With params (| json a="field"), only the named top-level fields are
// extracted, under the given label names.
func jsonLabels(ls map[string]string, line string, params []jsonParam) map[string]string {
	// A map of at most 8 is one group of slots: sized for the labels a
	// parameterised | json adds, most stay that small.
	extra := len(params)
	if params == nil {
		extra = 8
	}
	out := make(map[string]string, len(ls)+extra)
	for k, v := range ls {
		out[k] = v
	}
	if params != nil {
		return jsonExpressions(out, line, params)
	}
	var obj map[string]any
	d := json.NewDecoder(strings.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&obj); err != nil {
		out["__error__"] = "JSONParserErr"
		return out
	}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			name := nonLabel.ReplaceAllString(prefix+k, "_")
			switch x := v.(type) {
			case map[string]any:
				walk(name+"_", x)
				continue
			case []any:
				continue
			case string:
				v = x
			case json.Number:
				v = x.String()
			case bool:
				v = strconv.FormatBool(x)
			case nil:
				v = ""
			}
			if _, taken := ls[name]; taken {
				name += "_extracted"
			}
			out[name] = fmt.Sprint(v)
		}
	}
	walk("", obj)
	return out
}

// jsonPathRE reads one step of a JSON expression: a field name, ["key"] or [n].
var jsonPathRE = regexp.MustCompile(`^(?:\.?([A-Za-z_][A-Za-z0-9_]*)|\["((?:[^"\\]|\\.)*)"\]|\[([0-9]+)\])`)

// jsonExpressions extracts | json label="expression" as Loki does: a path of
// fields and indexes (request.headers["User-Agent"][0]); a string's value, a
// number's or bool's text, an object or array kept as its JSON text, "" for a
// path that leads nowhere or to null; __error__ on a line that is not JSON.
func jsonExpressions(out map[string]string, line string, params []jsonParam) map[string]string {
	p := jsonParsers.Get()
	defer jsonParsers.Put(p)
	v, err := p.Parse(line)
	if err != nil || v.Type() != fastjson.TypeObject {
		out["__error__"] = "JSONParserErr"
		return out
	}
	for _, p := range params {
		label, path := p.label, p.path
		x := v.Get(path.keys...)
		ok := path.ok
		switch {
		case !ok || x == nil || x.Type() == fastjson.TypeNull:
			out[label] = ""
		case x.Type() == fastjson.TypeString:
			out[label] = string(x.GetStringBytes())
		default:
			out[label] = x.String()
		}
	}
	return out
}

var promDurationRE = regexp.MustCompile(`^(?:[0-9]+(?:ms|s|m|h|d|w|y))+$`)
var promUnitRE = regexp.MustCompile(`([0-9]+)(ms|s|m|h|d|w|y)`)

// jsonParsers reuse fastjson's parsers across lines (each parse reuses the
// parser's memory).
var jsonParsers fastjson.ParserPool

// jsonParam is one label=expression of a parameterised | json, the
// expression read once, when the query is parsed.
type jsonParam struct {
	label string
	path  jsonPath
}

// jsonPath is one | json expression read as fastjson's keys; ok is false
// when the expression is not a path the fake reads.
type jsonPath struct {
	keys []string
	ok   bool
}

// jsonPaths holds each expression read once: a pushdown sends the same
// expressions in many query texts, each parsed on its own.
var jsonPaths sync.Map // expression -> jsonPath

func jsonPathOf(expr string) jsonPath {
	if p, ok := jsonPaths.Load(expr); ok {
		return p.(jsonPath)
	}
	p := jsonPath{ok: true}
	for rest := expr; rest != "" && p.ok; {
		m := jsonPathRE.FindStringSubmatch(rest)
		if m == nil {
			p.ok = false
			break
		}
		rest = rest[len(m[0]):]
		switch {
		case m[3] != "":
			p.keys = append(p.keys, m[3]) // fastjson reads a number as an array index
		case m[1] != "":
			p.keys = append(p.keys, m[1])
		default:
			k, err := strconv.Unquote(`"` + m[2] + `"`)
			p.ok = err == nil
			p.keys = append(p.keys, k)
		}
	}
	jsonPaths.Store(expr, p)
	return p
}

// promDuration parses a duration as Loki parses LogQL ranges (Prometheus'
// syntax: units ms, s, m, h, d, w, y; nothing below a millisecond).
func promDuration(s string) (time.Duration, error) {
	if !promDurationRE.MatchString(s) {
		return 0, fmt.Errorf("not a valid duration string: %q", s)
	}
	units := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour,
		"d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "y": 365 * 24 * time.Hour}
	var d time.Duration
	for _, m := range promUnitRE.FindAllStringSubmatch(s, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		d += time.Duration(n) * units[m[2]]
	}
	return d, nil
}

type lexer struct {
	s   string
	pos int
}

type token struct {
	kind string // ident, string, punct, range, eof
	text string
	pos  int
}

func (l *lexer) next() (token, error) {
	for l.pos < len(l.s) && (l.s[l.pos] == ' ' || l.s[l.pos] == '\t' || l.s[l.pos] == '\n') {
		l.pos++
	}
	if l.pos >= len(l.s) {
		return token{kind: "eof", pos: l.pos}, nil
	}
	start := l.pos
	c := l.s[l.pos]
	switch {
	case c == '"':
		i := l.pos + 1
		for i < len(l.s) && l.s[i] != '"' {
			if l.s[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(l.s) {
			return token{}, parseErr(start, "literal not terminated")
		}
		v, err := strconv.Unquote(l.s[l.pos : i+1])
		if err != nil {
			return token{}, parseErr(start, err.Error())
		}
		l.pos = i + 1
		return token{"string", v, start}, nil
	case c == '`':
		i := strings.IndexByte(l.s[l.pos+1:], '`')
		if i < 0 {
			return token{}, parseErr(start, "literal not terminated")
		}
		v := l.s[l.pos+1 : l.pos+1+i]
		l.pos += i + 2
		return token{"string", v, start}, nil
	case c == '[':
		i := strings.IndexByte(l.s[l.pos:], ']')
		if i < 0 {
			return token{}, parseErr(start, "missing closing ']' in duration")
		}
		d, err := promDuration(strings.TrimSpace(l.s[l.pos+1 : l.pos+i]))
		if err != nil {
			return token{}, parseErr(start, err.Error())
		}
		l.pos += i + 1
		return token{"range", d.String(), start}, nil
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		i := l.pos
		for i < len(l.s) && (l.s[i] == '_' || l.s[i] >= 'a' && l.s[i] <= 'z' || l.s[i] >= 'A' && l.s[i] <= 'Z' || l.s[i] >= '0' && l.s[i] <= '9') {
			i++
		}
		l.pos = i
		return token{"ident", l.s[start:i], start}, nil
	}
	if c >= '0' && c <= '9' {
		i := l.pos
		for i < len(l.s) && (l.s[i] >= '0' && l.s[i] <= '9' || l.s[i] == '.') {
			i++
		}
		l.pos = i
		return token{"number", l.s[start:i], start}, nil
	}
	for _, p := range []string{"|=", "!=", "|~", "!~", "=~", ">=", "<=", "==", ">", "<", "{", "}", "(", ")", ",", "|", "="} {
		if strings.HasPrefix(l.s[l.pos:], p) {
			l.pos += len(p)
			return token{"punct", p, start}, nil
		}
	}
	return token{}, parseErr(start, fmt.Sprintf("syntax error: unexpected %q", string(c)))
}

func parseErr(pos int, msg string) error {
	return fmt.Errorf("parse error at line 1, col %d: %s", pos+1, msg)
}

type parser struct {
	lx  lexer
	tok token
}

func (p *parser) advance() error {
	t, err := p.lx.next()
	p.tok = t
	return err
}

func (p *parser) expect(kind, text string) error {
	if p.tok.kind != kind || (text != "" && p.tok.text != text) {
		what := p.tok.text
		if p.tok.kind == "eof" {
			what = "end of input"
		}
		want := text
		if want == "" {
			want = strings.ToUpper(kind)
		}
		return parseErr(p.tok.pos, fmt.Sprintf("syntax error: unexpected %s, expecting %s", what, want))
	}
	return p.advance()
}

// ParseQuery parses a query of the subset the fake understands, with Loki's
// error texts for the mistakes it detects.
func ParseQuery(q string) (*Query, error) {
	p := &parser{lx: lexer{s: q}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != "eof" {
		return nil, parseErr(p.tok.pos, fmt.Sprintf("syntax error: unexpected %s", p.tok.text))
	}
	e.text = q
	return e, nil
}

func (p *parser) expr() (*Query, error) {
	if p.tok.kind == "ident" && p.tok.text == "sum" {
		if err := p.advance(); err != nil {
			return nil, err
		}
		var by []string
		var err error
		if p.tok.kind == "ident" && p.tok.text == "by" {
			if by, err = p.byClause(); err != nil {
				return nil, err
			}
		}
		if err := p.expect("punct", "("); err != nil {
			return nil, err
		}
		inner, err := p.expr()
		if err != nil {
			return nil, err
		}
		if inner.fn == "" || inner.sum {
			return nil, parseErr(p.tok.pos, "syntax error: sum needs a range aggregation")
		}
		if err := p.expect("punct", ")"); err != nil {
			return nil, err
		}
		if by == nil && p.tok.kind == "ident" && p.tok.text == "by" {
			if by, err = p.byClause(); err != nil {
				return nil, err
			}
		}
		inner.sum, inner.by = true, by
		return inner, nil
	}
	if p.tok.kind == "ident" && (p.tok.text == "count_over_time" || p.tok.text == "rate" || p.tok.text == "sum_over_time" || p.tok.text == "bytes_over_time") {
		fn := p.tok.text
		if err := p.advance(); err != nil {
			return nil, err
		}
		if err := p.expect("punct", "("); err != nil {
			return nil, err
		}
		e, err := p.logExpr()
		if err != nil {
			return nil, err
		}
		if p.tok.kind != "range" {
			return nil, parseErr(p.tok.pos, "syntax error: unexpected "+p.tok.text+", expecting RANGE")
		}
		d, _ := time.ParseDuration(p.tok.text)
		if err := p.advance(); err != nil {
			return nil, err
		}
		var off time.Duration
		if p.tok.kind == "ident" && p.tok.text == "offset" {
			if off, err = p.offset(); err != nil {
				return nil, err
			}
		}
		if err := p.expect("punct", ")"); err != nil {
			return nil, err
		}
		unwrapped := false
		for _, st := range e.stages {
			unwrapped = unwrapped || st.op == "unwrap"
		}
		// Loki's syntax check (ast.go): only the *_over_time aggregations of
		// values take an unwrap, and they need one.
		if unwrapped != (fn == "sum_over_time") {
			with := "without"
			if unwrapped {
				with = "with"
			}
			return nil, fmt.Errorf("parse error : invalid aggregation %s %s unwrap", fn, with)
		}
		e.fn, e.rng, e.offset = fn, d, off
		return e, nil
	}
	return p.logExpr()
}

// offset reads `offset <duration>` after a range. Loki's lexer reads the
// duration as Prometheus does and, failing that, as Go's time.ParseDuration
// (so "1ns" is one).
func (p *parser) offset() (time.Duration, error) {
	if err := p.advance(); err != nil {
		return 0, err
	}
	if p.tok.kind != "number" {
		return 0, parseErr(p.tok.pos, "syntax error: unexpected "+p.tok.text+", expecting DURATION")
	}
	text, pos := p.tok.text, p.tok.pos
	if err := p.advance(); err != nil {
		return 0, err
	}
	if p.tok.kind != "ident" || p.tok.pos != pos+len(text) {
		return 0, parseErr(pos, "syntax error: unexpected "+text+", expecting DURATION")
	}
	text += p.tok.text
	d, err := promDuration(text)
	if err != nil {
		if d, err = time.ParseDuration(text); err != nil {
			return 0, parseErr(pos, "syntax error: unexpected "+text+", expecting DURATION")
		}
	}
	return d, p.advance()
}

func (p *parser) byClause() ([]string, error) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := p.expect("punct", "("); err != nil {
		return nil, err
	}
	by := []string{}
	for p.tok.kind == "ident" {
		by = append(by, p.tok.text)
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == "punct" && p.tok.text == "," {
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
	}
	return by, p.expect("punct", ")")
}

func (p *parser) logExpr() (*Query, error) {
	e := &Query{}
	if err := p.expect("punct", "{"); err != nil {
		return nil, err
	}
	for {
		name := p.tok
		if err := p.expect("ident", ""); err != nil {
			return nil, err
		}
		op := p.tok
		if op.kind != "punct" || (op.text != "=" && op.text != "!=" && op.text != "=~" && op.text != "!~") {
			return nil, parseErr(op.pos, fmt.Sprintf("syntax error: unexpected %s, expecting = or != or =~ or !~", op.text))
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		val := p.tok
		if err := p.expect("string", ""); err != nil {
			return nil, err
		}
		m := fakeMatcher{name: name.text, op: op.text, value: val.text}
		if op.text == "=~" || op.text == "!~" {
			re, err := regexp.Compile("^(?:" + val.text + ")$")
			if err != nil {
				return nil, parseErr(val.pos, err.Error())
			}
			m.re = re
		}
		e.matchers = append(e.matchers, m)
		if p.tok.kind == "punct" && p.tok.text == "," {
			if err := p.advance(); err != nil {
				return nil, err
			}
			continue
		}
		if err := p.expect("punct", "}"); err != nil {
			return nil, err
		}
		break
	}
	nonEmpty := false
	for _, m := range e.matchers {
		if (m.op == "=" && m.value != "") || (m.op == "=~" && !m.re.MatchString("")) {
			nonEmpty = true
		}
	}
	if !nonEmpty {
		return nil, fmt.Errorf(`parse error : queries require at least one regexp or equality matcher that does not have an empty-compatible value. For instance, app=~".*" does not meet this requirement, but app=~".+" will`)
	}
	for p.tok.kind == "punct" {
		switch p.tok.text {
		case "|=", "!=", "|~", "!~":
			op := p.tok.text
			if err := p.advance(); err != nil {
				return nil, err
			}
			val := p.tok
			if err := p.expect("string", ""); err != nil {
				return nil, err
			}
			st := fakeStage{op: op, value: val.text}
			if op == "|~" || op == "!~" {
				re, err := regexp.Compile(val.text)
				if err != nil {
					return nil, parseErr(val.pos, err.Error())
				}
				st.re = newLineRegexp(re)
			}
			e.stages = append(e.stages, st)
		case "|":
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.tok.kind != "ident" {
				return nil, parseErr(p.tok.pos, "syntax error: unexpected "+p.tok.text+", expecting json or a label filter (fake subset)")
			}
			if p.tok.text == "unwrap" {
				if err := p.advance(); err != nil {
					return nil, err
				}
				name := p.tok
				if err := p.expect("ident", ""); err != nil {
					return nil, err
				}
				e.stages = append(e.stages, fakeStage{op: "unwrap", value: name.text})
				continue
			}
			if p.tok.text == "label_format" || p.tok.text == "drop" {
				st := fakeStage{op: p.tok.text}
				if err := p.advance(); err != nil {
					return nil, err
				}
				for p.tok.kind == "ident" {
					name := p.tok.text
					if err := p.advance(); err != nil {
						return nil, err
					}
					if st.op == "drop" {
						st.names = append(st.names, name)
					} else {
						if err := p.expect("punct", "="); err != nil {
							return nil, err
						}
						f := labelFormat{dst: name}
						switch p.tok.kind {
						case "ident":
							f.rename = p.tok.text
						case "string":
							t, err := template.New(name).Option("missingkey=zero").Funcs(templateFuncs).Parse(p.tok.text)
							if err != nil {
								return nil, parseErr(p.tok.pos, err.Error())
							}
							f.tmpl, f.memo = t, &templateMemo{m: map[string]templateOutput{}}
							f.reads, f.readsKnown = templateFields(t.Tree.Root)
							f.numeric, _ = numericTemplate(t.Tree.Root)
						default:
							return nil, parseErr(p.tok.pos, "syntax error: unexpected "+p.tok.text+", expecting IDENTIFIER or STRING")
						}
						if err := p.advance(); err != nil {
							return nil, err
						}
						st.formats = append(st.formats, f)
					}
					if p.tok.kind == "punct" && p.tok.text == "," {
						if err := p.advance(); err != nil {
							return nil, err
						}
					}
				}
				e.stages = append(e.stages, st)
				continue
			}
			if p.tok.text == "regexp" {
				if err := p.advance(); err != nil {
					return nil, err
				}
				val := p.tok
				if err := p.expect("string", ""); err != nil {
					return nil, err
				}
				re, err := regexp.Compile(val.text)
				if err != nil {
					return nil, parseErr(val.pos, err.Error())
				}
				// Loki's NewRegexpParser: at least one named capture.
				if !slices.ContainsFunc(re.SubexpNames(), func(n string) bool { return n != "" }) {
					return nil, parseErr(val.pos, "at least one named capture must be supplied")
				}
				e.stages = append(e.stages, fakeStage{op: "regexp", re: newLineRegexp(re)})
				continue
			}
			if p.tok.text == "json" {
				if err := p.advance(); err != nil {
					return nil, err
				}
				st := fakeStage{op: "json"}
				for p.tok.kind == "ident" {
					name := p.tok.text
					if err := p.advance(); err != nil {
						return nil, err
					}
					if err := p.expect("punct", "="); err != nil {
						return nil, err
					}
					field := p.tok
					if err := p.expect("string", ""); err != nil {
						return nil, err
					}
					// A label named twice takes the last expression, as
					// each is applied in order.
					st.params = append(st.params, jsonParam{label: name, path: jsonPathOf(field.text)})
					if p.tok.kind == "punct" && p.tok.text == "," {
						if err := p.advance(); err != nil {
							return nil, err
						}
					}
				}
				e.stages = append(e.stages, st)
				continue
			}
			st := fakeStage{op: "label"}
			join := ""
			for {
				name := p.tok
				if err := p.expect("ident", ""); err != nil {
					return nil, err
				}
				op := p.tok
				if op.kind != "punct" {
					return nil, parseErr(op.pos, "syntax error: unexpected "+op.text+", expecting a comparison")
				}
				if err := p.advance(); err != nil {
					return nil, err
				}
				cmp := labelCmp{join: join, name: name.text, op: op.text}
				switch p.tok.kind {
				case "number":
					x, err := strconv.ParseFloat(p.tok.text, 64)
					if err != nil {
						return nil, parseErr(p.tok.pos, err.Error())
					}
					cmp.num, cmp.isNum = x, true
				case "string":
					cmp.str = p.tok.text
					if op.text == "=~" || op.text == "!~" {
						re, err := regexp.Compile("^(?:" + p.tok.text + ")$")
						if err != nil {
							return nil, parseErr(p.tok.pos, err.Error())
						}
						cmp.re = re
					}
				default:
					return nil, parseErr(p.tok.pos, "syntax error: unexpected "+p.tok.text+", expecting a number or a string")
				}
				if err := p.advance(); err != nil {
					return nil, err
				}
				st.filter = append(st.filter, cmp)
				if p.tok.kind == "ident" && (p.tok.text == "or" || p.tok.text == "and") {
					join = p.tok.text
					if err := p.advance(); err != nil {
						return nil, err
					}
					continue
				}
				break
			}
			e.stages = append(e.stages, st)
			continue
		default:
			return e, nil
		}
	}
	return e, nil
}
