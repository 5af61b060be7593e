package detect

import (
	"net/url"
	"path"
	"strings"
)

// PathClass groups request targets by cost and cacheability, the way the site's
// cache and PHP see them. It is computed from the URL shape alone, never from a
// list of paths seen in one incident.
type PathClass string

// Path classes.
const (
	ClassAsset   PathClass = "asset"   // static file: css, js, images, fonts
	ClassArticle PathClass = "article" // a page view, cacheable for logged-out readers
	ClassTool    PathClass = "tool"    // a page with an action: edit, history, watch, diff
	ClassSpecial PathClass = "special" // a generated special page (Special:..., 특수:...)
	ClassAPI     PathClass = "api"     // api.php and REST endpoints
	ClassHealth  PathClass = "health"  // the proxy's health check
	ClassOther   PathClass = "other"
)

var assetExt = map[string]bool{
	".css": true, ".js": true, ".mjs": true, ".map": true, ".png": true, ".jpg": true,
	".jpeg": true, ".gif": true, ".svg": true, ".ico": true, ".webp": true, ".avif": true,
	".woff": true, ".woff2": true, ".ttf": true, ".otf": true, ".eot": true,
}

// specialNamespaces are the canonical and localised names of MediaWiki's Special
// namespace (English, Korean, Chinese, Japanese, German, French, Spanish).
var specialNamespaces = []string{"special:", "특수:", "特殊:", "特別:", "spezial:", "spécial:", "especial:"}

// viewActions are action= values that only render the page as it is.
var viewActions = map[string]bool{"": true, "view": true, "render": true}

// ClassifyPath returns the class of a request given its raw path and query.
func ClassifyPath(rawPath, rawQuery, healthURI string) PathClass {
	if healthURI != "" && rawPath == healthURI {
		return ClassHealth
	}
	p, err := url.PathUnescape(rawPath)
	if err != nil {
		p = rawPath
	}
	if assetExt[strings.ToLower(path.Ext(p))] {
		return ClassAsset
	}
	lp := strings.ToLower(p)
	if strings.HasSuffix(lp, "/api.php") || strings.HasSuffix(lp, "/rest.php") || strings.Contains(lp, "/api/") {
		return ClassAPI
	}
	q, _ := url.ParseQuery(rawQuery)
	title := strings.ToLower(q.Get("title"))
	if hasSpecialNamespace(lp) || hasSpecialNamespace(title) {
		return ClassSpecial
	}
	if !viewActions[strings.ToLower(q.Get("action"))] || q.Has("diff") || q.Has("oldid") || q.Has("curid") && q.Has("action") {
		return ClassTool
	}
	if strings.HasSuffix(lp, ".php") && !strings.HasSuffix(lp, "/index.php") {
		return ClassOther
	}
	if title != "" || strings.Count(lp, "/") >= 1 && lp != "/" {
		return ClassArticle
	}
	if lp == "/" {
		return ClassArticle
	}
	return ClassOther
}

func hasSpecialNamespace(s string) bool {
	for _, ns := range specialNamespaces {
		if strings.Contains(s, ns) {
			return true
		}
	}
	return false
}
