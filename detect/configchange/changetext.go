package configchange

import (
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/changes"
)

// The config-change analysis says its summaries and reasons as Texts of the
// detectors' catalog (config_change.* in detect/prose): report.json keeps
// their English, and the report says them again in its language. The pieces
// below (a change, its reference, a span, a list) are Texts too, so that a
// sentence holding them is said in one language throughout.

// changeText says a change of a setting: "listen.backlog 511 -> 4096".
func changeText(c sources.Change) prose.Text {
	return detect.Messages.Say("config_change.change", struct{ Key, Old, New string }{c.Key, c.Old, c.New})
}

// alsoText lists the changes made together with another.
func alsoText(cs []sources.Change) prose.Text {
	parts := make([]prose.Text, len(cs))
	for i, c := range cs {
		parts[i] = changeText(c)
	}
	return joined(", ", parts)
}

// reviewedLabel names a change the reason lists as reviewed.
func reviewedLabel(c sources.Change) prose.Text {
	label := struct {
		Kind         string
		Change       prose.Text
		Name, File   string
		Values, Note string
	}{Kind: "change"}
	switch {
	case c.Key == changes.KeyRestart:
		label.Kind = "restart"
	case c.Key != "":
		label.Kind, label.Change = "setting", changeText(c)
	case c.File == "" && c.Note != "":
		label.Kind, label.Name = "deploy", DeployName(c)
	case c.File != "":
		label.Kind, label.File = "file", c.File
		if c.New != "" || c.Old != "" {
			label.Values = strings.TrimSpace(c.Old + " " + c.New)
		}
	}
	return detect.Messages.Say("config_change.reviewed_label", label)
}

var hexRef = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// refText names the evidence: "commit 9d78ccb", "deploy-42", or the metric.
func refText(c sources.Change) prose.Text {
	ref := struct{ Commit, Other string }{}
	switch {
	case hexRef.MatchString(c.Ref):
		ref.Commit = c.Ref[:7]
	case c.Ref != "":
		ref.Other = c.Ref
	default:
		ref.Other = c.Source
	}
	return detect.Messages.Say("config_change.ref", ref)
}

// secsText says seconds as the reference does ("0.3 s", "9.6 s", "77 s"),
// and an infinite limit as none: "no limit", or for a timeout that a value
// switches off, "none".
func secsText(v float64) prose.Text { return seconds(v, false) }

func timeoutText(v float64) prose.Text { return seconds(v, true) }

func seconds(v float64, timeout bool) prose.Text {
	inf := math.IsInf(v, 1)
	if inf {
		v = 0
	}
	return detect.Messages.Say("config_change.seconds", struct {
		V            float64
		Inf, Timeout bool
	}{v, inf, timeout})
}

// spanSaid says a span of time as spanText does in English ("3 h 12 min",
// "40 min", "2 days").
func spanSaid(d time.Duration) prose.Text {
	if d < 0 {
		d = -d
	}
	days := 0
	if d >= 48*time.Hour {
		days = int(d.Hours() / 24)
	}
	return detect.Messages.Say("config_change.span", struct {
		D    time.Duration
		Days int
		Text string
	}{d.Round(time.Minute), days, detect.SpanText(d)})
}

// joined says items one after another with sep between them.
func joined(sep string, items []prose.Text) prose.Text {
	return detect.Messages.Say("config_change.join", struct {
		Sep   string
		Items []prose.Text
	}{sep, items})
}

// sentences says the arithmetic's clauses as one sentence in English
// ("a; b.") and as sentences of their own in Korean.
func sentences(s []prose.Text) prose.Text {
	if len(s) == 0 {
		return prose.Text{}
	}
	return detect.Messages.Say("config_change.sentences", s)
}

// said reports whether t says anything.
func said(t prose.Text) bool { return t.String() != "" }
