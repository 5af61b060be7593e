package cloudwatch

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Defaults of a MetricSpec's zero fields: EC2 CPU as the reference team read it.
const (
	DefaultNamespace = "AWS/EC2"
	DefaultMetric    = "CPUUtilization"
	DefaultStat      = "Average"
	DefaultPeriod    = time.Minute
	// InstanceDimension is the dimension EC2 publishes per-instance metrics under.
	InstanceDimension = "InstanceId"
)

// MetricSpec names one CloudWatch metric stream and how to aggregate it.
type MetricSpec struct {
	// Namespace of the metric; default "AWS/EC2".
	Namespace string `yaml:"namespace,omitempty" json:"namespace,omitempty"`
	// Metric is the metric name; default "CPUUtilization".
	Metric string `yaml:"metric,omitempty" json:"metric,omitempty"`
	// Dimensions are ALL the dimensions the stream is published with, by
	// name, e.g. {InstanceId: i-0abc}: CloudWatch matches them exactly.
	Dimensions map[string]string `yaml:"dimensions,omitempty" json:"dimensions,omitempty"`
	// Stat is the statistic: Average (default), Sum, Minimum, Maximum,
	// SampleCount, or an extended one such as p99 or TM(10%:90%).
	Stat string `yaml:"stat,omitempty" json:"stat,omitempty"`
	// Period is the length of each datapoint's interval; default 60s. It must
	// be a multiple of 60s, or 1, 5, 10, 20 or 30s for high-resolution
	// metrics. CloudWatch keeps 60 s data for 15 days, 5 min data for 63.
	Period time.Duration `yaml:"period,omitempty" json:"period,omitempty"`
}

// EC2CPU returns the default specs: CPUUtilization, Average, 60 s, of each
// instance.
func EC2CPU(instanceIDs ...string) []MetricSpec {
	out := make([]MetricSpec, len(instanceIDs))
	for i, id := range instanceIDs {
		out[i] = MetricSpec{
			Namespace:  DefaultNamespace,
			Metric:     DefaultMetric,
			Dimensions: map[string]string{InstanceDimension: id},
			Stat:       DefaultStat,
			Period:     DefaultPeriod,
		}
	}
	return out
}

// withDefaults fills the zero fields.
func (s MetricSpec) withDefaults() MetricSpec {
	if s.Namespace == "" {
		s.Namespace = DefaultNamespace
	}
	if s.Metric == "" {
		s.Metric = DefaultMetric
	}
	if s.Stat == "" {
		s.Stat = DefaultStat
	}
	if s.Period == 0 {
		s.Period = DefaultPeriod
	}
	return s
}

// Validate checks a spec (after defaults) against CloudWatch's rules and the
// OpenMetrics names it maps to.
func (s MetricSpec) Validate() error {
	s = s.withDefaults()
	switch p := s.Period; {
	case p <= 0:
		return fmt.Errorf("cloudwatch: %s: period %s must be positive", s, p)
	case p%time.Minute == 0:
	case p == time.Second || p == 5*time.Second || p == 10*time.Second || p == 20*time.Second || p == 30*time.Second:
	default:
		return fmt.Errorf("cloudwatch: %s: period %s must be a multiple of 60s, or 1, 5, 10, 20 or 30s", s, p)
	}
	if s.Period/time.Second > 1<<31-1 {
		return fmt.Errorf("cloudwatch: %s: period %s is too long", s, s.Period)
	}
	if len(s.Dimensions) > 30 {
		return fmt.Errorf("cloudwatch: %s: %d dimensions, CloudWatch allows 30", s, len(s.Dimensions))
	}
	if sanitize(s.Metric) == "" || sanitize(s.Stat) == "" {
		return fmt.Errorf("cloudwatch: %s: metric and stat must contain a letter or digit", s)
	}
	byLabel := map[string]string{}
	for name, value := range s.Dimensions {
		if name == "" || value == "" {
			return fmt.Errorf("cloudwatch: %s: dimension %q has an empty name or value", s, name)
		}
		if !utf8.ValidString(name) || !utf8.ValidString(value) {
			return fmt.Errorf("cloudwatch: %s: dimension %q is not valid UTF-8", s, name)
		}
		l := LabelName(name)
		if other, dup := byLabel[l]; dup {
			return fmt.Errorf("cloudwatch: %s: dimensions %q and %q both map to label %q", s, other, name, l)
		}
		byLabel[l] = name
	}
	return nil
}

// String renders the spec as recorded in bundle.yaml, e.g.
// `AWS/EC2 CPUUtilization{InstanceId="i-0abc"} Average 1m0s`.
func (s MetricSpec) String() string {
	names := make([]string, 0, len(s.Dimensions))
	for k := range s.Dimensions {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(s.Namespace)
	b.WriteByte(' ')
	b.WriteString(s.Metric)
	b.WriteByte('{')
	for i, k := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(s.Dimensions[k]))
	}
	b.WriteString("} ")
	b.WriteString(s.Stat)
	b.WriteByte(' ')
	b.WriteString(s.Period.String())
	return b.String()
}

// Name is the OpenMetrics name of the spec's series (after defaults).
func (s MetricSpec) Name() string {
	s = s.withDefaults()
	return MetricName(s.Namespace, s.Metric, s.Stat)
}

// Labels are the series' labels: each dimension under its LabelName.
func (s MetricSpec) Labels() map[string]string {
	out := make(map[string]string, len(s.Dimensions))
	for k, v := range s.Dimensions {
		out[LabelName(k)] = v
	}
	return out
}

// MetricName builds aws_<namespace>_<metric>_<stat>: the namespace without
// its "AWS/" prefix (any case), each part lowercased with every run of
// characters other than a-z and 0-9 turned into one "_". For example
// ("AWS/EC2", "CPUUtilization", "Average") is aws_ec2_cpuutilization_average
// and ("CWAgent", "mem_used_percent", "p99.9") is
// aws_cwagent_mem_used_percent_p99_9.
func MetricName(namespace, metric, stat string) string {
	ns := namespace
	if len(ns) >= 4 && strings.EqualFold(ns[:4], "AWS/") {
		ns = ns[4:]
	}
	parts := []string{"aws"}
	for _, p := range []string{ns, metric, stat} {
		if p = sanitize(p); p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "_")
}

// sanitize lowercases s and turns each run of characters other than a-z and
// 0-9 into one "_", trimmed at both ends.
func sanitize(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if under && b.Len() > 0 {
				b.WriteByte('_')
			}
			under = false
			b.WriteRune(r)
			continue
		}
		under = true
	}
	return b.String()
}

// LabelName turns a dimension name into a snake_case label name: InstanceId
// is instance_id, AutoScalingGroupName auto_scaling_group_name,
// DBInstanceIdentifier db_instance_identifier. Other characters than ASCII
// letters and digits become "_"; a leading digit gets a "_" in front.
func LabelName(dim string) string {
	rs := []rune(dim)
	isUpper := func(r rune) bool { return r >= 'A' && r <= 'Z' }
	isLowerOrDigit := func(r rune) bool { return (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') }
	var b strings.Builder
	for i, r := range rs {
		switch {
		case isUpper(r):
			// A word starts at an upper-case letter after a lower-case one or
			// a digit ("instanceId"), or at the last capital of an acronym
			// followed by a lower-case letter ("DBInstance").
			if i > 0 && (isLowerOrDigit(rs[i-1]) || (isUpper(rs[i-1]) && i+1 < len(rs) && rs[i+1] >= 'a' && rs[i+1] <= 'z')) {
				b.WriteByte('_')
			}
			b.WriteRune(r + ('a' - 'A'))
		case isLowerOrDigit(r):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	// Collapse runs of "_" and trim them.
	parts := strings.FieldsFunc(b.String(), func(r rune) bool { return r == '_' })
	out := strings.Join(parts, "_")
	switch {
	case out == "":
		return "dimension"
	case out[0] >= '0' && out[0] <= '9':
		return "_" + out
	}
	return out
}

var errNoMetrics = errors.New("cloudwatch: nothing to fetch: set instance_ids or metrics")
