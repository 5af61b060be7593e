package main

import (
	"bufio"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aftermath-forensics/aftermath/report"
	"github.com/aftermath-forensics/aftermath/sources/simulate"
)

// enumFlags are the flags whose values come from a fixed list, and where the
// list lives: the layer that owns the values, never a copy here.
var enumFlags = map[string]func() []string{
	"lang":     func() []string { return report.Langs },
	"format":   func() []string { return report.Formats },
	"scenario": simulate.Scenarios,
	"tz":       timeZones,
}

// registerCompletions gives every command's enum flags their values for
// shell completion (cobra's `completion` command). It walks the tree so that
// a command added later gets them too without a line of its own.
func registerCompletions(cmd *cobra.Command) {
	for name, values := range enumFlags {
		fl := cmd.Flags().Lookup(name)
		if fl == nil {
			continue
		}
		list := fl.Value.Type() == "stringSlice"
		_ = cmd.RegisterFlagCompletionFunc(name, func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return completeValues(values(), toComplete, list), cobra.ShellCompDirectiveNoFileComp
		})
	}
	for _, c := range cmd.Commands() {
		registerCompletions(c)
	}
}

// completeValues returns the values that start with toComplete; for a
// comma-separated list flag (--format md,html) it completes the last item
// and keeps the ones before it.
func completeValues(values []string, toComplete string, list bool) []string {
	prefix, last := "", toComplete
	if i := strings.LastIndexByte(toComplete, ','); list && i >= 0 {
		prefix, last = toComplete[:i+1], toComplete[i+1:]
	}
	have := map[string]bool{}
	for _, v := range strings.Split(prefix, ",") {
		have[v] = true
	}
	var out []string
	for _, v := range values {
		if strings.HasPrefix(v, last) && !have[v] {
			out = append(out, prefix+v)
		}
	}
	return out
}

// timeZones lists IANA zone names for --tz: the system's zone1970.tab when
// there is one (the embedded tzdata resolves names but cannot list them),
// and UTC always.
func timeZones() []string {
	zones := []string{"UTC"}
	f, err := os.Open("/usr/share/zoneinfo/zone1970.tab")
	if err != nil {
		return zones
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		if fields := strings.Split(line, "\t"); len(fields) >= 3 {
			zones = append(zones, fields[2])
		}
	}
	sort.Strings(zones[1:])
	return zones
}
