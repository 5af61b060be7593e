// Package cloudwatch reads metrics from Amazon CloudWatch with aws-sdk-go-v2's
// GetMetricData and its paginator, and writes them in a bundle's OpenMetrics
// form (metrics.Writer), so the detectors query them with PromQL like any
// other series.
//
// # What is fetched
//
// By default: EC2 CPUUtilization (namespace AWS/EC2, dimension InstanceId,
// statistic Average, period 60 s) of each instance in Config.InstanceIDs. Any
// other metric is a MetricSpec (namespace, metric, dimensions, statistic,
// period) in Config.Metrics. GetMetricData returns exactly the metric stream
// whose dimensions are given, so a spec names all of them.
//
// # Names
//
// A spec becomes one series:
//
//	aws_<namespace>_<metric>_<stat>{<dimension>="<value>", ...}
//
// namespace without its "AWS/" prefix, each part lowercased with every run of
// other characters than a-z and 0-9 turned into one "_", and dimension names
// in snake_case: AWS/EC2 CPUUtilization Average {InstanceId=i-0abc} is
// aws_ec2_cpuutilization_average{instance_id="i-0abc"}, the name
// yet-another-cloudwatch-exporter gives it in Prometheus, so the same PromQL
// serves both. A sample's timestamp is the start of its period, as CloudWatch
// stamps it.
//
// # Region, credentials, retries
//
// The standard chain of config.LoadDefaultConfig: environment, shared config
// and credentials files (Config.Profile), SSO, web identity, container and
// EC2 instance roles; Config.Region overrides the resolved region. Throttling
// and 5xx answers are retried by the SDK's standard retryer (exponential
// backoff with jitter; AWS_MAX_ATTEMPTS or Config.MaxAttempts attempts).
// Credentials never appear in Config.String, errors or results.
//
// # Completeness
//
// Each spec's Result counts its datapoints and says whether they are all of
// them: the last StatusCode CloudWatch gave for it must be Complete.
// PartialData on a page followed by a NextToken is normal paging; PartialData
// (or InternalError, Forbidden) on the last page, a page that failed after
// the retries, or a spec missing from the answer makes it incomplete, and the
// datapoints received before are still written.
//
// # Wire protocol
//
// This SDK version (service/cloudwatch v1.76) speaks Smithy RPC v2 CBOR to
// CloudWatch, not the older query protocol: POST
// /service/GraniteServiceVersion20100801/operation/GetMetricData with a CBOR
// body, "Smithy-Protocol: rpc-v2-cbor" and, because CloudWatch is
// awsQueryCompatible, "X-Amzn-Query-Mode: true"; errors carry their query-era
// code in X-Amzn-Query-Error (e.g. "Throttling;Sender"). The tests answer in
// exactly that protocol.
package cloudwatch
