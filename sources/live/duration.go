package live

import (
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/aftermath-forensics/aftermath/sources/duration"
)

// Duration is a length of time in the duration package's grammar: "90s",
// "10m", "3h", "7d", "2w". A bare number is refused (except 0): its unit
// would be a guess.
type Duration time.Duration

// D returns d as a *Duration, for building a Config in code.
func D(d time.Duration) *Duration { x := Duration(d); return &x }

// UnmarshalYAML parses "3h", "90m", "7d", "0".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	s := strings.TrimSpace(n.Value)
	if n.Kind != yaml.ScalarNode || s == "" {
		return fmt.Errorf("line %d: want a duration such as 3h or 90m", n.Line)
	}
	v, err := duration.Parse(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as "3h0m0s".
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

func (d *Duration) or(def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return time.Duration(*d)
}
