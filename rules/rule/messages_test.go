package rule

import (
	"slices"
	"strings"
	"testing"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/prose/prosetest"
)

// TestMessages: the steps are defined in English and Korean and said.
func TestMessages(t *testing.T) {
	prosetest.Check(t, Messages, prose.Langs, ".", "Say")
}

// TestDeployStepsInEveryLanguage: every language types the same commands
// (the build command, the order option and the caddy commands are code, not
// prose), so a translation cannot change what the operator runs.
func TestDeployStepsInEveryLanguage(t *testing.T) {
	commands := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			if strings.HasPrefix(l, "     ") {
				out = append(out, strings.TrimSpace(l))
			}
		}
		return out
	}
	en := commands(DeploySteps())
	if !slices.Contains(en, BuildCommand) || !slices.Contains(en, OrderOption) {
		t.Fatalf("English steps lack the build command or the order option: %q", en)
	}
	for _, lang := range prose.Langs {
		if got := commands(DeployStepsIn(lang)); !slices.Equal(got, en) {
			t.Errorf("%s steps type %q, English %q", lang, got, en)
		}
	}
}
