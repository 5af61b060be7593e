package replay

import (
	"fmt"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/aftermath-forensics/aftermath/rules"
)

// ScaleRule returns the rate_limit block with every zone's window divided by
// speed. A replay at speed X sends the same requests X times closer
// together; a zone admits Events per Window of wall-clock time, so the rule
// that judges the compressed traffic as the original rule judged the
// recorded traffic has windows X times shorter. The result is adapted by
// Caddy (rules.Validate) before it is returned.
func ScaleRule(block string, speed float64) (string, error) {
	if speed <= 0 {
		return "", fmt.Errorf("scale rule: speed %g must be positive", speed)
	}
	d := caddyfile.NewTestDispenser(block)
	lines := strings.Split(block, "\n")
	zones, windows := 0, 0
	for d.Next() {
		if d.Val() != "rate_limit" {
			return "", fmt.Errorf("scale rule: line %d: expected rate_limit, got %q", d.Line(), d.Val())
		}
		for outer := d.Nesting(); d.NextBlock(outer); {
			if d.Val() != "zone" {
				continue
			}
			zones++
			if !d.NextArg() {
				return "", fmt.Errorf("scale rule: line %d: a zone without a name", d.Line())
			}
			for inner := d.Nesting(); d.NextBlock(inner); {
				if d.Val() != "window" || !d.NextArg() {
					continue
				}
				w, err := caddy.ParseDuration(d.Val())
				if err != nil {
					return "", fmt.Errorf("scale rule: line %d: window %q: %w", d.Line(), d.Val(), err)
				}
				scaled := time.Duration(float64(w) / speed)
				if scaled < time.Millisecond {
					return "", fmt.Errorf("scale rule: window %s / %g is under a millisecond", w, speed)
				}
				n := d.Line() - 1
				if n < 0 || n >= len(lines) || strings.Count(lines[n], d.Val()) != 1 || !strings.Contains(lines[n], "window") {
					return "", fmt.Errorf("scale rule: line %d does not hold the window alone", d.Line())
				}
				lines[n] = strings.Replace(lines[n], d.Val(), rules.CaddyDuration(scaled.Round(time.Millisecond)), 1)
				windows++
			}
		}
	}
	if zones == 0 || windows != zones {
		return "", fmt.Errorf("scale rule: %d zones but %d windows found", zones, windows)
	}
	out := strings.Join(lines, "\n")
	if err := rules.Validate(out); err != nil {
		return "", fmt.Errorf("scale rule: the scaled block: %w", err)
	}
	return out, nil
}
