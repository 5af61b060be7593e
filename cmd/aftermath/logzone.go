package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/evidence"
)

// logZone is --log-tz: the zone the access log's zone-less times were
// written in (Caddy's console encoder, time_format wall), when Caddy's
// configuration set time_local. --tz is where times are shown and never
// moves evidence.
type logZone string

func (z *logZone) String() string { return string(*z) }
func (z *logZone) Type() string   { return "zone" }
func (z *logZone) Set(s string) error {
	if _, err := time.LoadLocation(s); err != nil {
		return err
	}
	*z = logZone(s)
	return nil
}

func (z *logZone) register(fl *pflag.FlagSet) {
	fl.Var(z, "log-tz", "time zone of log times written without one (Caddy's console encoder, time_format wall, when Caddy set time_local; php-fpm's log) (default UTC, or the bundle's timezone when a Caddyfile in changes/ sets time_local)")
}

// apply decides in.LogZone from --log-tz, the bundle's Caddy configuration
// (dir, "" for none) and its timezone (bundle.LogZone).
func (z logZone) apply(in *evidence.Inputs, dir string) error {
	loc, why, warn, err := bundle.LogZone(dir, string(z), in.Manifest.Timezone)
	if err != nil {
		return usageErrorf("%v", err)
	}
	in.LogZone, in.LogZoneWhy = loc, why
	if warn != "" {
		in.Notes = append(in.Notes, sources.QualityNote{Source: "access", Severity: sources.SeverityWarning, Message: warn})
	}
	return nil
}
