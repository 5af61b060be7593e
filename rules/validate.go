package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile" // registers the "caddyfile" adapter
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	_ "github.com/mholt/caddy-ratelimit" // registers the rate_limit directive and handler (v0.1.0)
)

// sentinel is the body of the respond directive that follows the snippet in the
// site block Validate builds: the only other handler the adapted config may hold.
const sentinel = "aftermath-validate-sentinel"

// adapt places snippet in a site block of its own and adapts it with Caddy's
// Caddyfile adapter. v0.1.0 registers its directive order itself (rate_limit
// before basic_auth: see its caddyfile.go), so no global `order` option is needed.
func adapt(snippet string) ([]byte, error) {
	if err := plainText(snippet); err != nil {
		return nil, err
	}
	site := "http://:8080 {\n" + snippet + "\nrespond \"" + sentinel + "\" 200\n}\n"
	formatted := caddyfile.Format([]byte(site))
	adapter := caddyconfig.GetAdapter("caddyfile")
	if adapter == nil {
		return nil, errors.New("validate: Caddy's caddyfile adapter is not registered")
	}
	js, ws, err := adaptCaddyfile(adapter, formatted, "rules.caddy")
	if err != nil {
		return nil, fmt.Errorf("validate: Caddy rejected the snippet: %w", err)
	}
	if len(ws) > 0 {
		return nil, fmt.Errorf("validate: Caddy warned: %s", strings.Join(ws, "; "))
	}
	return js, nil
}

// plainText refuses snippets that hold invalid UTF-8 or control characters
// other than tab and newline.
func plainText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("validate: the snippet is not valid UTF-8")
	}
	for i, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			return fmt.Errorf("validate: control character %U at byte %d", r, i)
		}
	}
	return nil
}

// Validate adapts snippet (one rate_limit block, as Caddyfile prints it) inside
// a site block with the real Caddy Caddyfile adapter and caddy-ratelimit
// v0.1.0, then checks that every subdirective it holds survives into the JSON
// config: v0.1.0 ignores subdirectives it does not know (e.g. ipv4_prefix)
// without a word, and a rule that silently lost part of itself is worse than
// none. The adapted config must hold exactly one site, the rate_limit handler
// and the sentinel response: nothing in the snippet may add a handler, a
// directive or a site.
func Validate(snippet string) error {
	_, err := validate(snippet)
	return err
}

// validate is Validate, returning the handler Caddy adapted.
func validate(snippet string) (*adaptedHandler, error) {
	want, err := readSnippet(snippet)
	if err != nil {
		return nil, err
	}
	js, err := adapt(snippet)
	if err != nil {
		return nil, err
	}
	h, err := rateLimitHandler(js)
	if err != nil {
		return nil, err
	}
	return h, want.survives(h)
}

// snippetShape is what a rate_limit block says, read from its tokens the way
// v0.1.0's UnmarshalCaddyfile reads them, but keeping what it would ignore.
type snippetShape struct {
	zones                                     map[string]*zoneShape
	logKey, jitter, sweep, distributed, store bool
}

type zoneShape struct {
	key, window, events string
	// match lists, per match block, the matcher names it holds; "not" lists
	// the names inside it as "not/<name>".
	match [][]string
}

// readSnippet walks the snippet's tokens. Anything v0.1.0 does not parse is an
// error here, because v0.1.0 would drop it.
func readSnippet(snippet string) (*snippetShape, error) {
	if err := plainText(snippet); err != nil {
		return nil, err
	}
	toks, err := caddyfile.Tokenize([]byte(snippet), "snippet")
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	d := caddyfile.NewDispenser(toks)
	if !d.Next() || d.Val() != "rate_limit" {
		return nil, errors.New("validate: the snippet must be one rate_limit block")
	}
	if d.NextArg() {
		return nil, d.Errf("validate: rate_limit takes no argument, got %q", d.Val())
	}
	s := &snippetShape{zones: map[string]*zoneShape{}}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		sub := d.Val()
		switch sub {
		case "zone":
			if !d.NextArg() {
				return nil, d.Err("validate: zone without a name")
			}
			name := d.Val()
			if _, dup := s.zones[name]; dup {
				return nil, d.Errf("validate: zone %s defined twice (v0.1.0 keeps the last one)", name)
			}
			z := &zoneShape{}
			s.zones[name] = z
			for zn := d.Nesting(); d.NextBlock(zn); {
				switch sz := d.Val(); sz {
				case "key", "window", "events":
					args := d.RemainingArgs()
					if len(args) != 1 {
						return nil, d.Errf("validate: zone %s: %s takes one argument, got %d", name, sz, len(args))
					}
					switch sz {
					case "key":
						z.key = args[0]
					case "window":
						z.window = args[0]
					default:
						z.events = args[0]
					}
				case "match":
					names, err := matchNames(d)
					if err != nil {
						return nil, fmt.Errorf("validate: zone %s: %w", name, err)
					}
					z.match = append(z.match, names)
				default:
					return nil, d.Errf("validate: zone %s: subdirective %q is not known to caddy-ratelimit v0.1.0, which would silently ignore it", name, sz)
				}
			}
		case "log_key":
			s.logKey = true
		case "jitter":
			s.jitter = true
		case "sweep_interval":
			s.sweep = true
		case "distributed":
			s.distributed = true
		case "storage":
			s.store = true
		default:
			return nil, d.Errf("validate: subdirective %q is not known to caddy-ratelimit v0.1.0, which would silently ignore it", sub)
		}
		// Skip the rest of the line and any block: their values are checked
		// against the adapted JSON below.
		for d.NextArg() {
		}
		for n := d.Nesting(); d.NextBlock(n); {
		}
	}
	if d.Next() {
		return nil, d.Errf("validate: %q after the rate_limit block: the snippet must hold that block alone", d.Val())
	}
	return s, nil
}

// matchNames lists the matchers of one match block.
func matchNames(d *caddyfile.Dispenser) ([]string, error) {
	var names []string
	for n := d.Nesting(); d.NextBlock(n); {
		name := d.Val()
		if name == "not" {
			if d.NextArg() {
				names = append(names, "not/"+d.Val())
			}
			for nn := d.Nesting(); d.NextBlock(nn); {
				names = append(names, "not/"+d.Val())
				for d.NextArg() {
				}
			}
		} else {
			names = append(names, name)
		}
		for d.NextArg() {
		}
		for nn := d.Nesting(); d.NextBlock(nn); {
		}
	}
	if len(names) == 0 {
		return nil, d.Err("empty match block (it would match every request)")
	}
	return names, nil
}

// adaptedHandler is the rate_limit handler of an adapted config.
type adaptedHandler struct {
	RateLimits map[string]adaptedZone `json:"rate_limits"`
	Jitter     *float64               `json:"jitter"`
	Sweep      json.RawMessage        `json:"sweep_interval"`
	LogKey     bool                   `json:"log_key"`
	Dist       json.RawMessage        `json:"distributed"`
	Storage    json.RawMessage        `json:"storage"`
}

type adaptedZone struct {
	Match     []map[string]json.RawMessage `json:"match"`
	Key       string                       `json:"key"`
	MaxEvents int                          `json:"max_events"`
	Window    json.RawMessage              `json:"window"`
}

// survives checks the adapted handler against the snippet's shape.
func (s *snippetShape) survives(h *adaptedHandler) error {
	var lost []string
	for name, z := range s.zones {
		az, ok := h.RateLimits[name]
		if !ok {
			lost = append(lost, "zone "+name)
			continue
		}
		if z.key != "" && az.Key == "" {
			lost = append(lost, "zone "+name+": key")
		}
		if z.window != "" && (len(az.Window) == 0 || string(az.Window) == "0") {
			lost = append(lost, "zone "+name+": window")
		}
		if z.events != "" {
			if n, err := strconv.Atoi(z.events); err != nil || n != az.MaxEvents {
				lost = append(lost, "zone "+name+": events "+z.events)
			}
		}
		if len(z.match) != len(az.Match) {
			lost = append(lost, fmt.Sprintf("zone %s: %d match blocks became %d matcher sets", name, len(z.match), len(az.Match)))
			continue
		}
		for i, names := range z.match {
			for _, m := range names {
				outer, inner, isNot := strings.Cut(m, "/")
				raw, ok := az.Match[i][outer]
				if !ok {
					lost = append(lost, fmt.Sprintf("zone %s: match block %d: %s", name, i+1, m))
					continue
				}
				if isNot {
					var sets []map[string]json.RawMessage
					if err := json.Unmarshal(raw, &sets); err != nil || !anyHas(sets, inner) {
						lost = append(lost, fmt.Sprintf("zone %s: match block %d: %s", name, i+1, m))
					}
				}
			}
		}
	}
	if len(h.RateLimits) != len(s.zones) {
		lost = append(lost, fmt.Sprintf("%d zones in the snippet, %d adapted", len(s.zones), len(h.RateLimits)))
	}
	if s.logKey && !h.LogKey {
		lost = append(lost, "log_key")
	}
	if s.jitter && h.Jitter == nil {
		lost = append(lost, "jitter")
	}
	if s.sweep && len(h.Sweep) == 0 {
		lost = append(lost, "sweep_interval")
	}
	if s.distributed && len(h.Dist) == 0 {
		lost = append(lost, "distributed")
	}
	if s.store && len(h.Storage) == 0 {
		lost = append(lost, "storage")
	}
	if len(lost) > 0 {
		sort.Strings(lost)
		return fmt.Errorf("validate: not in the config Caddy adapted: %s", strings.Join(lost, "; "))
	}
	return nil
}

func anyHas(sets []map[string]json.RawMessage, name string) bool {
	for _, s := range sets {
		if _, ok := s[name]; ok {
			return true
		}
	}
	return false
}

// rateLimitHandler checks the shape of an adapted config (one server, one
// listener, the rate_limit handler and the sentinel response, nothing else)
// and returns the handler.
func rateLimitHandler(js []byte) (*adaptedHandler, error) {
	var cfg struct {
		Apps map[string]json.RawMessage `json:"apps"`
	}
	if err := json.Unmarshal(js, &cfg); err != nil {
		return nil, fmt.Errorf("validate: adapted config: %w", err)
	}
	if len(cfg.Apps) != 1 || cfg.Apps["http"] == nil {
		return nil, fmt.Errorf("validate: the adapted config has apps %v, want only http", keys(cfg.Apps))
	}
	var app struct {
		Servers map[string]struct {
			Listen []string          `json:"listen"`
			Routes []json.RawMessage `json:"routes"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(cfg.Apps["http"], &app); err != nil {
		return nil, fmt.Errorf("validate: adapted http app: %w", err)
	}
	if len(app.Servers) != 1 {
		return nil, fmt.Errorf("validate: the snippet made %d servers, want 1", len(app.Servers))
	}
	var handlers []json.RawMessage
	for _, srv := range app.Servers {
		if len(srv.Listen) != 1 || srv.Listen[0] != ":8080" {
			return nil, fmt.Errorf("validate: the snippet changed the listeners to %v", srv.Listen)
		}
		for _, r := range srv.Routes {
			if err := flattenHandlers(r, &handlers, true); err != nil {
				return nil, err
			}
		}
	}
	var h *adaptedHandler
	var others []string
	for _, raw := range handlers {
		var kind struct {
			Handler string `json:"handler"`
			Body    string `json:"body"`
		}
		if err := json.Unmarshal(raw, &kind); err != nil {
			return nil, fmt.Errorf("validate: adapted handler: %w", err)
		}
		switch {
		case kind.Handler == "rate_limit" && h == nil:
			h = &adaptedHandler{}
			if err := json.Unmarshal(raw, h); err != nil {
				return nil, fmt.Errorf("validate: adapted rate_limit: %w", err)
			}
		case kind.Handler == "static_response" && kind.Body == sentinel:
		default:
			others = append(others, kind.Handler)
		}
	}
	if len(others) > 0 {
		return nil, fmt.Errorf("validate: the snippet added handlers %v", others)
	}
	if h == nil {
		return nil, errors.New("validate: no rate_limit handler in the adapted config")
	}
	return h, nil
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// validateZones adapts the printed zones and checks that the JSON Caddy built
// is exactly the one the model implies, matcher for matcher: the printer and
// the adapter agree, and nothing from the logs changed the config's shape. It
// returns the adapted handler's zones for the backtest.
func validateZones(snippet string, zones []Zone) (map[string]adaptedZone, error) {
	h, err := validate(snippet)
	if err != nil {
		return nil, err
	}
	if !h.LogKey || h.Jitter == nil || *h.Jitter != jitter || len(h.Sweep) > 0 || len(h.Dist) > 0 || len(h.Storage) > 0 {
		return nil, errors.New("validate: handler settings differ from the ones printed")
	}
	if len(h.RateLimits) != len(zones) {
		return nil, fmt.Errorf("validate: %d zones printed, %d adapted", len(zones), len(h.RateLimits))
	}
	for i := range zones {
		z := &zones[i]
		got, ok := h.RateLimits[z.Name]
		if !ok {
			return nil, fmt.Errorf("validate: zone %s missing from the adapted config", z.Name)
		}
		want := expectedZone(z)
		if got.Key != want.Key || got.MaxEvents != want.MaxEvents || string(got.Window) != string(want.Window) {
			return nil, fmt.Errorf("validate: zone %s adapted as key %q, %d events, window %s; want %q, %d, %s",
				z.Name, got.Key, got.MaxEvents, got.Window, want.Key, want.MaxEvents, want.Window)
		}
		if err := sameJSON(got.Match, want.Match); err != nil {
			return nil, fmt.Errorf("validate: zone %s matchers: %w", z.Name, err)
		}
	}
	return h.RateLimits, nil
}

// expectedZone renders the JSON a zone must adapt to, straight from the model
// and Caddy's own matcher types: a second path to the same config that shares
// nothing with the printer.
func expectedZone(z *Zone) adaptedZone {
	key := z.Name
	if z.PerClient {
		key = "{http.vars." + caddyhttp.ClientIPVarKey + "}"
	}
	win, _ := json.Marshal(caddy.Duration(z.Window))
	out := adaptedZone{Key: key, MaxEvents: z.Events, Window: win}
	for _, t := range z.Targets {
		set := map[string]any{}
		switch {
		case len(t.Paths) > 0:
			set["path"] = caddyhttp.MatchPath(t.Paths)
		case t.QueryKey != "" && t.ValueRegexp != "":
			set["vars_regexp"] = caddyhttp.MatchVarsRE{queryValueVar(t.QueryKey): &caddyhttp.MatchRegexp{Pattern: t.ValueRegexp}}
		case t.QueryKey != "":
			set["query"] = caddyhttp.MatchQuery{t.QueryKey: t.QueryValues}
		case len(t.TitleNames) > 0:
			set["vars_regexp"] = caddyhttp.MatchVarsRE{titleVar: &caddyhttp.MatchRegexp{Pattern: titleRegexp(t.TitleNames)}}
		}
		c := z.Cond
		if c.Method != "" {
			set["method"] = caddyhttp.MatchMethod{c.Method}
		}
		hdr := caddyhttp.MatchHeader{}
		var not []map[string]any
		if c.NotCookie != "" {
			not = append(not, map[string]any{"header": caddyhttp.MatchHeader{"Cookie": {"*" + c.NotCookie + "*"}}})
		}
		if c.NotCookieRegexp != "" {
			not = append(not, map[string]any{"header_regexp": caddyhttp.MatchHeaderRE{"Cookie": &caddyhttp.MatchRegexp{Pattern: c.NotCookieRegexp}}})
		}
		if c.NoSiteReferer {
			for _, p := range siteRefererPatterns {
				not = append(not, map[string]any{"header": caddyhttp.MatchHeader{"Referer": {p}}})
			}
		}
		if len(not) > 0 {
			set["not"] = not
		}
		if c.NoCookie {
			hdr["Cookie"] = nil
		}
		if c.NoClientHints {
			hdr["Sec-Ch-Ua"] = nil
		}
		if c.AnyLang {
			hdr["Accept-Language"] = []string{"*"}
		}
		hre := caddyhttp.MatchHeaderRE{}
		switch {
		case c.UserAgent != "" && len(c.UserAgentVersions) > 0:
			hre["User-Agent"] = &caddyhttp.MatchRegexp{Pattern: uaVersionRegexp(c.UserAgent, c.UserAgentVersions)}
		case c.UserAgent != "":
			hdr["User-Agent"] = []string{"*" + c.UserAgent + "*"}
		}
		if len(hdr) > 0 {
			set["header"] = hdr
		}
		if c.Lang != "" {
			hre["Accept-Language"] = &caddyhttp.MatchRegexp{Pattern: langRegexp(c.Lang)}
		}
		if len(hre) > 0 {
			set["header_regexp"] = hre
		}
		raw := map[string]json.RawMessage{}
		for k, v := range set {
			raw[k], _ = json.Marshal(v)
		}
		out.Match = append(out.Match, raw)
	}
	return out
}

// sameJSON compares two values by their JSON meaning.
func sameJSON(a, b any) error {
	norm := func(v any) (any, error) {
		js, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		var out any
		err = json.Unmarshal(js, &out)
		return out, err
	}
	na, err := norm(a)
	if err != nil {
		return err
	}
	nb, err := norm(b)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(na, nb) {
		ja, _ := json.Marshal(na)
		jb, _ := json.Marshal(nb)
		return fmt.Errorf("adapted %s, want %s", clip(string(ja), 600), clip(string(jb), 600))
	}
	return nil
}

// CaddyfileCheck is what Caddy's adapter made of a whole Caddyfile holding
// the rate_limit block.
type CaddyfileCheck struct {
	// Server is the name of the server (in the adapted JSON) that runs it.
	Server string
	// Handlers lists the handlers of the site's route in that server, in the
	// order a request meets them (subroutes flattened): rate_limit must come
	// before any rewrite.
	Handlers []string
	// Warnings are the adapter's warnings about the file (formatting,
	// deprecated options and the like).
	Warnings []string
}

// CheckCaddyfile adapts a whole Caddyfile with Caddy's Caddyfile adapter and
// caddy-ratelimit v0.1.0, as `caddy adapt` does, and checks that exactly one
// rate_limit handler came out, holding exactly the named zones, and that in
// its server no rewrite (rewrite, uri, try_files all adapt to one) comes
// before it: the zones must see the request as the client sent it.
func CheckCaddyfile(src []byte, filename string, zones []string) (*CaddyfileCheck, error) {
	if err := plainText(string(src)); err != nil {
		return nil, fmt.Errorf("%s: %w", filename, err)
	}
	adapter := caddyconfig.GetAdapter("caddyfile")
	if adapter == nil {
		return nil, errors.New("validate: Caddy's caddyfile adapter is not registered")
	}
	js, warnings, err := adaptCaddyfile(adapter, src, filename)
	if err != nil {
		if strings.Contains(err.Error(), "unrecognized directive") {
			// caddymodules.go links the common HTTP modules only.
			return nil, fmt.Errorf("validate: Caddy's adapter in aftermath rejected %s: %w (aftermath links Caddy's common HTTP modules and caddy-ratelimit only: if the directive comes from a module your Caddy has, check the copy with `caddy validate` instead)", filename, err)
		}
		return nil, fmt.Errorf("validate: Caddy rejected %s: %w", filename, err)
	}
	out := &CaddyfileCheck{Warnings: warnings}
	var cfg struct {
		Apps struct {
			HTTP struct {
				Servers map[string]struct {
					Routes []json.RawMessage `json:"routes"`
				} `json:"servers"`
			} `json:"http"`
		} `json:"apps"`
	}
	if err := json.Unmarshal(js, &cfg); err != nil {
		return nil, fmt.Errorf("validate: adapted config: %w", err)
	}
	found := 0
	for _, name := range keys(cfg.Apps.HTTP.Servers) {
		// A site block with a host adapts to one top-level route matching
		// that host; a site without one (":8080") spreads its directives over
		// top-level routes with no host matcher (a path matcher, or none).
		// The site's handlers are those of the routes with the rate_limit's
		// route's hosts or with no host matcher, in order.
		type topRoute struct {
			hosts    string
			handlers []json.RawMessage
			kinds    []string
			limits   int
		}
		var routes []topRoute
		limitAt := -1
		for i, raw := range cfg.Apps.HTTP.Servers[name].Routes {
			var r struct {
				Match []map[string]json.RawMessage `json:"match"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				return nil, fmt.Errorf("validate: adapted route: %w", err)
			}
			tr := topRoute{}
			for _, set := range r.Match {
				tr.hosts += string(set["host"])
			}
			if err := flattenHandlers(raw, &tr.handlers, false); err != nil {
				return nil, err
			}
			for _, h := range tr.handlers {
				var kind struct {
					Handler string `json:"handler"`
				}
				if err := json.Unmarshal(h, &kind); err != nil {
					return nil, fmt.Errorf("validate: adapted handler: %w", err)
				}
				tr.kinds = append(tr.kinds, kind.Handler)
				if kind.Handler == "rate_limit" {
					tr.limits++
					found++
					if limitAt < 0 {
						limitAt = i
					}
				}
			}
			routes = append(routes, tr)
		}
		if limitAt < 0 {
			continue
		}
		var limit *adaptedHandler
		var kinds []string
		rewriteFirst := ""
		for _, tr := range routes {
			if tr.hosts != "" && tr.hosts != routes[limitAt].hosts {
				continue
			}
			for j, h := range tr.handlers {
				kinds = append(kinds, tr.kinds[j])
				switch {
				case tr.kinds[j] == "rate_limit" && limit == nil:
					limit = &adaptedHandler{}
					if err := json.Unmarshal(h, limit); err != nil {
						return nil, fmt.Errorf("validate: adapted rate_limit: %w", err)
					}
				case tr.kinds[j] == "rewrite" && limit == nil && rewriteFirst == "":
					rewriteFirst = string(h)
				}
			}
		}
		if rewriteFirst != "" {
			return nil, fmt.Errorf("validate: in server %s a rewrite runs before rate_limit (%s): the zones would see the rewritten path; add %q to the global options", name, clip(rewriteFirst, 200), OrderOption)
		}
		got := keys(limit.RateLimits)
		want := append([]string(nil), zones...)
		sort.Strings(want)
		if !reflect.DeepEqual(got, want) {
			return nil, fmt.Errorf("validate: the rate_limit handler in server %s holds zones %v, want %v", name, got, want)
		}
		out.Server, out.Handlers = name, kinds
	}
	if found != 1 {
		return nil, fmt.Errorf("validate: %s adapted to %d rate_limit handlers, want 1", filename, found)
	}
	return out, nil
}

// flattenHandlers gathers a route's handlers in order, descending into
// subroutes. With refuseMatchers it refuses any route, at any depth, that has
// matchers: a rule snippet must not add one.
func flattenHandlers(route json.RawMessage, out *[]json.RawMessage, refuseMatchers bool) error {
	var r struct {
		Match  json.RawMessage   `json:"match"`
		Handle []json.RawMessage `json:"handle"`
	}
	if err := json.Unmarshal(route, &r); err != nil {
		return fmt.Errorf("validate: adapted route: %w", err)
	}
	if refuseMatchers && len(r.Match) > 0 {
		return fmt.Errorf("validate: the snippet added a route matcher %s", clip(string(r.Match), 200))
	}
	for _, h := range r.Handle {
		var sub struct {
			Handler string            `json:"handler"`
			Routes  []json.RawMessage `json:"routes"`
		}
		if err := json.Unmarshal(h, &sub); err != nil {
			return fmt.Errorf("validate: adapted handler: %w", err)
		}
		if sub.Handler == "subroute" {
			for _, sr := range sub.Routes {
				if err := flattenHandlers(sr, out, refuseMatchers); err != nil {
					return err
				}
			}
			continue
		}
		*out = append(*out, h)
	}
	return nil
}
