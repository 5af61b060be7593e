// Package logql holds the LogQL conventions that the Loki client
// (sources/loki) and its fake (sources/loki/lokitest) must agree on. The fake
// cannot import the client: the client's own tests import the fake.
package logql

import (
	"sort"
	"strconv"
	"strings"
)

// LabelsKey renders a label set the way Loki and Prometheus print one:
// {a="x", b="y"}, names sorted, empty values left out (an empty value is the
// same as an absent label). It is the identity of a stream.
func LabelsKey(ls map[string]string) string {
	names := make([]string, 0, len(ls))
	for n, v := range ls {
		if v != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(ls[n]))
	}
	b.WriteByte('}')
	return b.String()
}
