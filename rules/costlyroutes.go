package rules

import (
	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/detect/request"
	"github.com/aftermath-forensics/aftermath/sources"
)

// costlyRoutes decides which requests a zone is about: those whose route
// template detect measured as expensive and uncacheable for one of the
// crawlers (PHP time per request well above the site's typical request, PHP
// answering most of them), whatever the application. MediaWiki's tool names
// (detect.ToolLabel) only name such requests; they never select them.
type costlyRoutes struct {
	templates *detect.TemplateMatcher
	// byClass: every crawler finding came from a report.json written before
	// route costs were measured; the path classes are all there is to go by.
	byClass bool
}

func newCostlyRoutes(refs []crawlerRef) costlyRoutes {
	var c costlyRoutes
	measured := false
	var templates []string
	for _, ref := range refs {
		measured = measured || ref.measured
		for _, t := range ref.expensive {
			templates = appendNew(templates, t)
		}
	}
	c.templates = detect.NewTemplateMatcher(templates)
	c.byClass = len(refs) > 0 && !measured
	return c
}

// match reports whether the request is for an expensive route, and the
// measured template it falls under ("" for none, or when going by class).
func (c costlyRoutes) match(r *sources.Request, class request.PathClass) (bool, string) {
	if c.byClass {
		return class == request.ClassTool || class == request.ClassSpecial || class == request.ClassAPI, ""
	}
	if class == request.ClassAsset || class == request.ClassHealth {
		return false, ""
	}
	tpl, ok := c.templates.Match(r.Path, r.Query)
	return ok, tpl
}

func appendNew(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}
