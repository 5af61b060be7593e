package configchange

import (
	"strings"

	"github.com/aftermath-forensics/aftermath/detect"
	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources/changes"
)

// knob is one row of the mechanism table: a setting, which way it raises the
// risk, the failure mode it leads to and the finding kinds that show it.
type knob struct {
	name string
	// raises is +1 when a higher value raises the risk, -1 when a lower one
	// does, 0 when any change may (direction unknown).
	raises int
	// unit parses values: "count", "seconds" (Caddy and php-fpm durations),
	// or "" for text compared as is.
	unit string
	// def is the value in force when the key is absent; for "seconds",
	// "inf" means no timeout at all.
	def string
	// zeroIsInf: a value of 0 switches the limit off (request_terminate_timeout).
	zeroIsInf bool
	// effect is the failure mode the setting leads to, said as a clause
	// (SayLater: the table is made as the program starts).
	effect prose.Text
	// kinds are the finding kinds the failure mode shows as, strongest first.
	kinds []detect.Kind
	// strength is how directly the setting causes that failure mode (0-1).
	strength float64
	test     func(a *assessment, q QueueFacts)
}

// knobs is the mechanism table (design.md, "config_change").
var knobs = []struct {
	match func(key string) bool
	k     knob
}{
	{keyIs("listen.backlog"), knob{name: "listen.backlog", raises: +1, unit: "count", def: "511",
		effect:   detect.Messages.SayLater("config_change.effect.listen_backlog", nil),
		kinds:    []detect.Kind{detect.KindHealthcheckStarved, detect.KindClientAbandonedWork, detect.KindListenQueueOverflow, detect.KindUpstreamErrors, detect.KindIdlePinning},
		strength: 1, test: backlogTest}},
	{keyIs("pm.max_children"), knob{name: "pm.max_children", raises: -1, unit: "count",
		effect:   detect.Messages.SayLater("config_change.effect.pm_max_children", nil),
		kinds:    []detect.Kind{detect.KindWorkerSaturation, detect.KindListenQueueOverflow, detect.KindHealthcheckStarved, detect.KindClientAbandonedWork},
		strength: 1, test: workersTest}},
	{keyIs("pm"), knob{name: "pm", unit: "",
		effect:   detect.Messages.SayLater("config_change.effect.pm", nil),
		kinds:    []detect.Kind{detect.KindWorkerSaturation, detect.KindListenQueueOverflow},
		strength: 0.5}},
	{keyIs("pm.max_requests"), knob{name: "pm.max_requests", unit: "",
		effect:   detect.Messages.SayLater("config_change.effect.pm_max_requests", nil),
		kinds:    []detect.Kind{detect.KindWorkerSaturation},
		strength: 0.3}},
	{keyIs("request_terminate_timeout"), knob{name: "request_terminate_timeout", raises: +1, unit: "seconds", def: "0", zeroIsInf: true,
		effect:   detect.Messages.SayLater("config_change.effect.request_terminate_timeout", nil),
		kinds:    []detect.Kind{detect.KindWorkerSaturation, detect.KindIdlePinning, detect.KindClientAbandonedWork, detect.KindSelfAmplification},
		strength: 0.7}},
	{keyIs("listen"), knob{name: "listen", unit: "",
		effect:   detect.Messages.SayLater("config_change.effect.listen", nil),
		kinds:    []detect.Kind{detect.KindListenQueueOverflow, detect.KindHealthcheckStarved, detect.KindUpstreamErrors},
		strength: 0.6}},
	{keySuffix("read_timeout"), knob{name: "read_timeout", raises: -1, unit: "seconds", def: "inf",
		effect:   detect.Messages.SayLater("config_change.effect.read_timeout", nil),
		kinds:    []detect.Kind{detect.KindHealthcheckStarved, detect.KindUpstreamErrors},
		strength: 0.9, test: timeoutTest}},
	{keySuffix("health_timeout"), knob{name: "health_timeout", raises: -1, unit: "seconds", def: "5s",
		effect:   detect.Messages.SayLater("config_change.effect.health_timeout", nil),
		kinds:    []detect.Kind{detect.KindHealthcheckStarved, detect.KindUpstreamErrors},
		strength: 0.9, test: timeoutTest}},
	{keySuffix("health_fails"), knob{name: "health_fails", raises: -1, unit: "count", def: "1",
		effect:   detect.Messages.SayLater("config_change.effect.health_fails", nil),
		kinds:    []detect.Kind{detect.KindHealthcheckStarved, detect.KindUpstreamErrors},
		strength: 0.8}},
	{keySuffix("health_uri"), knob{name: "health_uri", unit: "",
		effect:   detect.Messages.SayLater("config_change.effect.health_uri", nil),
		kinds:    []detect.Kind{detect.KindHealthcheckStarved},
		strength: 0.6}},
	{keySuffix("health_interval"), knob{name: "health_interval", unit: "",
		effect:   detect.Messages.SayLater("config_change.effect.health_interval", nil),
		kinds:    []detect.Kind{detect.KindHealthcheckStarved},
		strength: 0.3}},
	{keySuffix("dial_timeout"), knob{name: "dial_timeout", raises: -1, unit: "seconds", def: "3s",
		effect:   detect.Messages.SayLater("config_change.effect.dial_timeout", nil),
		kinds:    []detect.Kind{detect.KindUpstreamErrors, detect.KindListenQueueOverflow},
		strength: 0.6}},
	{keyContains("lb_"), knob{name: "lb_*", unit: "",
		effect:   detect.Messages.SayLater("config_change.effect.lb", nil),
		kinds:    []detect.Kind{detect.KindUpstreamErrors, detect.KindHealthcheckStarved},
		strength: 0.4}},
	{keyPrefix("rate_limit"), knob{name: "rate_limit", unit: "",
		effect:   detect.Messages.SayLater("config_change.effect.rate_limit", nil),
		kinds:    []detect.Kind{detect.KindCrawlerBurst, detect.KindWorkerSaturation, detect.KindSelfAmplification},
		strength: 0.9}},
	{keyAnyOf("php_version", "base_image"), knob{name: "PHP runtime", unit: "",
		effect:   detect.Messages.SayLater("config_change.effect.php_runtime", nil),
		kinds:    []detect.Kind{detect.KindWorkerSaturation, detect.KindHealthcheckStarved, detect.KindListenQueueOverflow},
		strength: 0.6, test: serviceTimeTest}},
	{keyIs("max_execution_time"), knob{name: "max_execution_time", raises: +1, unit: "seconds", def: "30", zeroIsInf: true,
		effect:   detect.Messages.SayLater("config_change.effect.max_execution_time", nil),
		kinds:    []detect.Kind{detect.KindWorkerSaturation, detect.KindClientAbandonedWork},
		strength: 0.5}},
	{keyPrefix("opcache."), knob{name: "opcache", unit: "",
		effect:   detect.Messages.SayLater("config_change.effect.opcache", nil),
		kinds:    []detect.Kind{detect.KindWorkerSaturation},
		strength: 0.6, test: serviceTimeTest}},
}

func keyIs(k string) func(string) bool { return func(s string) bool { return s == k } }
func keyPrefix(p string) func(string) bool {
	return func(s string) bool { return strings.HasPrefix(s, p) }
}
func keyContains(p string) func(string) bool {
	return func(s string) bool { return strings.Contains(s, p) }
}
func keyAnyOf(ks ...string) func(string) bool {
	return func(s string) bool {
		for _, k := range ks {
			if s == k {
				return true
			}
		}
		return false
	}
}
func keySuffix(p string) func(string) bool {
	return func(s string) bool { return s == p || strings.HasSuffix(s, "."+p) }
}

func knobFor(key string) *knob {
	ck := changes.CanonicalKey(key)
	for i := range knobs {
		if knobs[i].match(ck) {
			k := knobs[i].k
			return &k
		}
	}
	return nil
}
