package live

import (
	"strconv"
	"strings"

	"github.com/aftermath-forensics/aftermath/sources/cloudwatch"
)

// CloudWatch says which AWS metrics to read. Region and credentials come
// from the standard AWS chain (environment, shared config files, SSO, web
// identity, instance role); keys are never written here.
type CloudWatch struct {
	// Region overrides the chain's region, e.g. "ap-northeast-2".
	Region string `yaml:"region"`
	// Profile selects a profile of ~/.aws/config and ~/.aws/credentials.
	Profile string `yaml:"profile"`
	// Endpoint replaces CloudWatch's endpoint (a VPC endpoint).
	Endpoint string `yaml:"endpoint"`
	// InstanceIDs get EC2 CPUUtilization, Average, every 60 s each, written
	// as aws_ec2_cpuutilization_average{instance_id="..."}.
	InstanceIDs []string `yaml:"instance_ids"`
	// Metrics are further metrics: namespace (default AWS/EC2), metric
	// (default CPUUtilization), dimensions (all of them), stat (default
	// Average), period (default 60s).
	Metrics []cloudwatch.MetricSpec `yaml:"metrics"`
	// MaxAttempts is how many times a call is tried. Default: the SDK's (3).
	MaxAttempts int `yaml:"max_attempts"`
}

func (cw *CloudWatch) validate() error {
	if len(cw.InstanceIDs) == 0 && len(cw.Metrics) == 0 {
		return keyErr("cloudwatch", "set instance_ids or metrics")
	}
	for i, id := range cw.InstanceIDs {
		if strings.TrimSpace(id) == "" {
			return keyErr("cloudwatch.instance_ids."+strconv.Itoa(i), "empty instance id")
		}
	}
	for i, m := range cw.Metrics {
		if err := m.Validate(); err != nil {
			return keyErr("cloudwatch.metrics."+strconv.Itoa(i), "%v", err)
		}
	}
	if cw.MaxAttempts < 0 {
		return keyErr("cloudwatch.max_attempts", "must not be negative")
	}
	return nil
}

func (cw *CloudWatch) clientConfig() cloudwatch.Config {
	return cloudwatch.Config{
		Region: cw.Region, Profile: cw.Profile, Endpoint: cw.Endpoint,
		InstanceIDs: cw.InstanceIDs, Metrics: cw.Metrics, MaxAttempts: cw.MaxAttempts,
	}
}
