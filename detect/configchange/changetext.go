package configchange

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
)

func changeText(c sources.Change) string {
	return fmt.Sprintf("%s %s -> %s", c.Key, valueOrNone(c.Old), valueOrNone(c.New))
}

func alsoText(cs []sources.Change) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = changeText(c)
	}
	return strings.Join(parts, ", ")
}

func reviewedLabel(c sources.Change) string {
	switch {
	case c.Key == changes.KeyRestart:
		return "restart"
	case c.Key != "":
		return changeText(c)
	case c.File == "" && c.Note != "":
		return "deploy " + DeployName(c)
	case c.File != "":
		s := c.File
		if c.New != "" || c.Old != "" {
			s += " (" + strings.TrimSpace(c.Old+" "+c.New) + ")"
		}
		return s
	}
	return "change"
}

var hexRef = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// refText names the evidence: "commit 9d78ccb", "deploy-42", or the metric.
func refText(c sources.Change) string {
	ref := c.Ref
	switch {
	case hexRef.MatchString(ref):
		return "commit " + ref[:7]
	case ref != "":
		return ref
	}
	return c.Source
}

func valueOrNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

// fmtSecTrim prints seconds as the reference does: "0.3 s", "9.6 s", "77 s".
func fmtSecTrim(v float64) string {
	if math.IsInf(v, 1) {
		return "no limit"
	}
	return fmtSec(v)
}

func timeoutText(v float64) string {
	if math.IsInf(v, 1) {
		return "none"
	}
	return fmtSec(v)
}

func sentences(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return strings.Join(s, "; ") + "."
}
