package detect

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Facts are a finding's named numbers: one struct per finding kind, declared
// beside its detector. Each field carries its report.json name as a json tag;
// a float64, int or bool field is always stated, a Maybe field only when the
// detector measured it (report.json leaves it out otherwise, and a missing
// number is never read as 0 by mistake: the reader sees OK). Reading a fact by
// field makes a typo a compile error, where a map key read 0 silently.
//
// report.json keeps the facts as one object of numbers sorted by name (a bool
// is 1 or 0): FactMap builds it, and a finding's JSON goes through it.
type Facts interface {
	// FindingKind is the kind of finding these facts belong to.
	FindingKind() Kind
}

// Maybe is a fact a detector states only when it could measure it.
type Maybe[T float64 | int | bool] struct {
	V  T
	OK bool
}

// Some is a measured fact.
func Some[T float64 | int | bool](v T) Maybe[T] { return Maybe[T]{V: v, OK: true} }

// optionalFact is what FactMap needs of a Maybe, whatever its T.
type optionalFact interface {
	factValue() (float64, bool)
	setFact(v float64)
}

// Or is the value when it is known, else unknown.
func (m Maybe[T]) Or(unknown T) T {
	if m.OK {
		return m.V
	}
	return unknown
}

func (m Maybe[T]) factValue() (float64, bool) {
	if !m.OK {
		return 0, false
	}
	return factNumber(reflect.ValueOf(m.V)), true
}

func (m *Maybe[T]) setFact(v float64) {
	setFactNumber(reflect.ValueOf(&m.V).Elem(), v)
	m.OK = true
}

// extraFacts is implemented by facts whose names are not fixed (upstream
// errors count each status code under "status_<code>").
type extraFacts interface {
	addExtraFacts(m map[string]float64)
	setExtraFact(name string, v float64) bool
	// extraFactPrefixes are the prefixes of those names, each followed by a
	// number in report.json ("status_" for "status_503").
	extraFactPrefixes() []string
}

// FactsOf returns f's facts as the struct of kind P points to. No finding
// (nil), a finding without facts, or one with facts of another kind reads as
// all zero (nothing measured), as a missing number always did; writes to that
// zero value are not kept.
func FactsOf[T any, P interface {
	*T
	Facts
}](f *Finding) P {
	if f != nil {
		if p, ok := f.Facts.(P); ok && p != nil {
			return p
		}
	}
	return P(new(T))
}

// FactMap is fs as report.json writes it: each stated fact by its name.
func FactMap(fs Facts) map[string]float64 {
	m := map[string]float64{}
	v, ok := factStruct(fs)
	if !ok {
		return m
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name := factName(t.Field(i))
		if name == "" {
			continue
		}
		fv := v.Field(i)
		if o, ok := fv.Addr().Interface().(optionalFact); ok {
			if x, set := o.factValue(); set {
				m[name] = x
			}
			continue
		}
		m[name] = factNumber(fv)
	}
	if x, ok := fs.(extraFacts); ok {
		x.addExtraFacts(m)
	}
	return m
}

// FactNames lists the names report.json may give fs's facts: its fields'
// names in declaration order, and for facts whose names are not fixed the
// prefixes their numbered names start with ("status_" for "status_503"). The
// report.json schema's per-kind facts are checked against it.
func FactNames(fs Facts) (names, numberedPrefixes []string) {
	v, ok := factStruct(fs)
	if !ok {
		return nil, nil
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if name := factName(t.Field(i)); name != "" {
			names = append(names, name)
		}
	}
	if x, ok := fs.(extraFacts); ok {
		numberedPrefixes = x.extraFactPrefixes()
	}
	return names, numberedPrefixes
}

// setFacts fills fs (a pointer to a facts struct) from report.json's numbers.
func setFacts(fs Facts, m map[string]float64) error {
	v, ok := factStruct(fs)
	if !ok || reflect.ValueOf(fs).Kind() != reflect.Pointer {
		return fmt.Errorf("facts of %s: not a pointer to a struct", fs.FindingKind())
	}
	t := v.Type()
	fields := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		if name := factName(t.Field(i)); name != "" {
			fields[name] = i
		}
	}
	extra, _ := fs.(extraFacts)
	for name, x := range m {
		i, known := fields[name]
		switch {
		case known:
			fv := v.Field(i)
			if o, ok := fv.Addr().Interface().(optionalFact); ok {
				o.setFact(x)
			} else {
				setFactNumber(fv, x)
			}
		case extra != nil && extra.setExtraFact(name, x):
		default:
			return fmt.Errorf("facts of %s: unknown fact %q", fs.FindingKind(), name)
		}
	}
	return nil
}

// factStruct is the addressable struct behind fs.
func factStruct(fs Facts) (reflect.Value, bool) {
	if fs == nil {
		return reflect.Value{}, false
	}
	v := reflect.ValueOf(fs)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}, false
		}
		v = v.Elem()
	} else {
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		v = c
	}
	return v, v.Kind() == reflect.Struct
}

// factName is a field's report.json name, "" for a field that is no fact.
func factName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

func factNumber(v reflect.Value) float64 {
	switch v.Kind() {
	case reflect.Float64:
		return v.Float()
	case reflect.Int, reflect.Int64:
		return float64(v.Int())
	case reflect.Bool:
		if v.Bool() {
			return 1
		}
		return 0
	}
	panic("detect: a fact must be float64, int, bool or Maybe, not " + v.Type().String())
}

func setFactNumber(v reflect.Value, x float64) {
	switch v.Kind() {
	case reflect.Float64:
		v.SetFloat(x)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(x))
	case reflect.Bool:
		v.SetBool(x != 0)
	default:
		panic("detect: a fact must be float64, int, bool or Maybe, not " + v.Type().String())
	}
}

// NewFacts returns empty facts of kind, from its registered Spec.
func NewFacts(kind Kind) (Facts, error) {
	s, ok := SpecOf(kind)
	if !ok {
		return nil, fmt.Errorf("finding kind %q is not registered", kind)
	}
	return s.NewFacts(), nil
}

// factsJSON writes facts as report.json's object of numbers ({} for none).
type factsJSON struct{ Facts }

func (f factsJSON) MarshalJSON() ([]byte, error) { return json.Marshal(FactMap(f.Facts)) }

// MarshalJSON writes the finding with its facts as report.json's object of
// numbers; every other field as its tag says.
func (f Finding) MarshalJSON() ([]byte, error) {
	type plain Finding // the fields without this method
	p := plain(f)
	p.Facts = factsJSON{f.Facts}
	return json.Marshal(p)
}

// UnmarshalJSON reads a finding back, its facts into its kind's struct.
func (f *Finding) UnmarshalJSON(data []byte) error {
	type plain Finding
	aux := struct {
		*plain
		Facts map[string]float64 `json:"facts"`
	}{plain: (*plain)(f)}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	fs, err := ParseFacts(f.Kind, aux.Facts)
	if err != nil {
		return fmt.Errorf("finding %s: %w", f.ID, err)
	}
	f.Facts = fs
	return nil
}

// ParseFacts reads report.json's facts object of a finding of kind into the
// kind's struct; a name the kind does not declare is an error.
func ParseFacts(kind Kind, m map[string]float64) (Facts, error) {
	fs, err := NewFacts(kind)
	if err != nil {
		return nil, err
	}
	if err := setFacts(fs, m); err != nil {
		return nil, err
	}
	return fs, nil
}

// MustParseFacts is ParseFacts for facts known to be right (tests, tables);
// it panics on a name the kind does not declare.
func MustParseFacts(kind Kind, m map[string]float64) Facts {
	fs, err := ParseFacts(kind, m)
	if err != nil {
		panic(err)
	}
	return fs
}
