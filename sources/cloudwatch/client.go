package cloudwatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	cw "github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/bundle"
	"github.com/aftermath-forensics/aftermath/sources/metrics"
)

// Source is the name this package gives its bundle records and notes.
const Source = "cloudwatch"

// MaxQueriesPerCall is the most metric queries one GetMetricData call takes.
const MaxQueriesPerCall = 500

// Config says which metrics to read and where.
type Config struct {
	// Region overrides the region of the standard chain (AWS_REGION, the
	// profile's region, IMDS), e.g. "ap-northeast-2".
	Region string `yaml:"region,omitempty" json:"region,omitempty"`
	// Profile selects a profile of the shared config and credentials files
	// (as AWS_PROFILE does).
	Profile string `yaml:"profile,omitempty" json:"profile,omitempty"`
	// Endpoint replaces CloudWatch's endpoint (a VPC endpoint, a test server),
	// e.g. "https://monitoring.ap-northeast-2.amazonaws.com".
	Endpoint string `yaml:"endpoint,omitempty" json:"endpoint,omitempty"`
	// InstanceIDs get the default spec each: EC2 CPUUtilization, Average, 60s.
	InstanceIDs []string `yaml:"instance_ids,omitempty" json:"instance_ids,omitempty"`
	// Metrics are further metric streams to read (zero fields take the EC2
	// CPU defaults).
	Metrics []MetricSpec `yaml:"metrics,omitempty" json:"metrics,omitempty"`
	// MaxAttempts is how many times a call is tried (throttling and 5xx are
	// retried with backoff); 0 leaves it to AWS_MAX_ATTEMPTS or the SDK's
	// default (3).
	MaxAttempts int `yaml:"max_attempts,omitempty" json:"max_attempts,omitempty"`
	// MaxDatapoints is how many datapoints one page holds before CloudWatch
	// paginates; 0 is the service's default (100,800).
	MaxDatapoints int32 `yaml:"max_datapoints,omitempty" json:"max_datapoints,omitempty"`
	// Credentials, when set, replace the standard chain's (e.g. a caller's
	// assumed role). Never printed or marshalled.
	Credentials aws.CredentialsProvider `yaml:"-" json:"-"`
}

// String renders the configuration without credentials (it says only
// whether explicit ones are set, and never retrieves them).
func (c Config) String() string {
	creds := "standard chain"
	if c.Credentials != nil {
		creds = "explicit (REDACTED)"
	}
	return fmt.Sprintf("cloudwatch.Config{Region:%q, Profile:%q, Endpoint:%q, InstanceIDs:%d, Metrics:%d, MaxAttempts:%d, MaxDatapoints:%d, Credentials:%s}",
		c.Region, c.Profile, redactURL(c.Endpoint), len(c.InstanceIDs), len(c.Metrics), c.MaxAttempts, c.MaxDatapoints, creds)
}

// GoString makes %#v redact as well.
func (c Config) GoString() string { return c.String() }

// LogValue makes log/slog redact as well.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// redactURL hides user info in an endpoint URL.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		if strings.Contains(raw, "@") {
			return "REDACTED"
		}
		return raw
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	return u.String()
}

// specs returns the specs to fetch with defaults filled in: the instances'
// CPU first, then Metrics.
func (c Config) specs() ([]MetricSpec, error) {
	all := append(EC2CPU(c.InstanceIDs...), c.Metrics...)
	if len(all) == 0 {
		return nil, errNoMetrics
	}
	series := map[string]MetricSpec{}
	for i := range all {
		all[i] = all[i].withDefaults()
		if err := all[i].Validate(); err != nil {
			return nil, err
		}
		// Two specs written as one series would interleave their samples.
		key := seriesText(all[i].Name(), all[i].Labels())
		if prev, dup := series[key]; dup {
			return nil, fmt.Errorf("cloudwatch: %s and %s both become %s", prev, all[i], key)
		}
		series[key] = all[i]
	}
	return all, nil
}

// Client reads CloudWatch metrics.
type Client struct {
	cfg   Config
	specs []MetricSpec
	api   cw.GetMetricDataAPIClient
}

// New resolves region and credentials through the standard chain (with
// cfg's overrides) and returns a client. optFns adjust the SDK client
// (tests set a fast retryer). Credentials are not retrieved until the first
// call.
func New(ctx context.Context, cfg Config, optFns ...func(*cw.Options)) (*Client, error) {
	specs, err := cfg.specs()
	if err != nil {
		return nil, err
	}
	var lo []func(*config.LoadOptions) error
	if cfg.Region != "" {
		lo = append(lo, config.WithRegion(cfg.Region))
	}
	if cfg.Profile != "" {
		lo = append(lo, config.WithSharedConfigProfile(cfg.Profile))
	}
	if cfg.Credentials != nil {
		lo = append(lo, config.WithCredentialsProvider(cfg.Credentials))
	}
	if cfg.MaxAttempts > 0 {
		lo = append(lo, config.WithRetryMaxAttempts(cfg.MaxAttempts))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, fmt.Errorf("cloudwatch: loading AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, errors.New("cloudwatch: no region: set AWS_REGION, a profile's region or the config's region")
	}
	opts := append([]func(*cw.Options){func(o *cw.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	}}, optFns...)
	return &Client{cfg: cfg, specs: specs, api: cw.NewFromConfig(awsCfg, opts...)}, nil
}

// String describes the client without credentials.
func (c *Client) String() string { return "cloudwatch.Client{" + c.cfg.String() + "}" }

// Specs returns the metric specs the client fetches, defaults filled in.
func (c *Client) Specs() []MetricSpec { return append([]MetricSpec(nil), c.specs...) }

// Result is what one spec returned.
type Result struct {
	Spec MetricSpec
	// ID is the spec's query id in GetMetricData.
	ID string
	// Metric and Labels name the series written.
	Metric string
	Labels map[string]string
	// From and To are the window asked for, aligned to the spec's period.
	From, To time.Time
	// Datapoints counts the datapoints written.
	Datapoints int
	// Status is the last StatusCode CloudWatch gave the query ("" if it never
	// answered for it).
	Status string
	// Complete is true when every datapoint of the window was received.
	Complete bool
	// Messages are CloudWatch's messages about the query, and why it is
	// incomplete when it is.
	Messages []string

	lost   bool // datapoints were received but could not be written
	failed bool // a GetMetricData request for it failed
}

// Record is the result as bundle.yaml lists it (the caller sets File).
func (r Result) Record() bundle.Query {
	q := bundle.Query{Source: Source, Query: r.Spec.String(), From: r.From, To: r.To, Complete: r.Complete, Failed: r.failed}
	if r.Datapoints > 0 {
		q.Series = 1
	}
	note := fmt.Sprintf("%d datapoints as %s", r.Datapoints, seriesText(r.Metric, r.Labels))
	if r.Status != "" {
		note += "; status " + r.Status
	}
	if len(r.Messages) > 0 {
		note += "; " + strings.Join(r.Messages, "; ")
	}
	q.Note = note
	return q
}

// Notes returns a data-quality warning for each incomplete result.
func Notes(results []Result) []sources.QualityNote {
	var out []sources.QualityNote
	for _, r := range results {
		if r.Complete {
			continue
		}
		msg := fmt.Sprintf("%s: incomplete, %d datapoints received", r.Spec, r.Datapoints)
		if len(r.Messages) > 0 {
			msg += " (" + strings.Join(r.Messages, "; ") + ")"
		}
		out = append(out, sources.QualityNote{Source: Source, Severity: sources.SeverityWarning, Message: msg})
	}
	return out
}

func seriesText(name string, lbls map[string]string) string {
	keys := make([]string, 0, len(lbls))
	for k := range lbls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(lbls[k])
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// Fetch reads every spec over [from, to) and writes the datapoints to w. The
// window is widened to whole periods (CloudWatch answers for whole periods
// anyway). Specs are asked for in calls of up to 500 queries with the same
// period, each paged with the SDK's paginator.
//
// The results, one per spec in the client's order, are valid whatever the
// error: a call that fails after the SDK's retries marks its specs
// incomplete (what its earlier pages returned is written), Fetch goes on
// with the next call, and returns the failures joined.
func (c *Client) Fetch(ctx context.Context, from, to time.Time, w *metrics.Writer) ([]Result, error) {
	if !to.After(from) {
		return nil, fmt.Errorf("cloudwatch: window end %s is not after its start %s", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	results := make([]Result, len(c.specs))
	byPeriod := map[time.Duration][]int{}
	var periods []time.Duration
	for i, s := range c.specs {
		f, t := align(from, to, s.Period)
		results[i] = Result{Spec: s, ID: "m" + strconv.Itoa(i), Metric: s.Name(), Labels: s.Labels(), From: f, To: t}
		if byPeriod[s.Period] == nil {
			periods = append(periods, s.Period)
		}
		byPeriod[s.Period] = append(byPeriod[s.Period], i)
	}
	var errs []error
	for _, p := range periods {
		idx := byPeriod[p]
		for len(idx) > 0 {
			n := min(len(idx), MaxQueriesPerCall)
			if err := c.call(ctx, results, idx[:n], w); err != nil {
				errs = append(errs, err)
			}
			idx = idx[n:]
		}
	}
	for i := range results {
		r := &results[i]
		if r.Status == "" && len(r.Messages) == 0 {
			r.Messages = append(r.Messages, "no result returned")
		}
	}
	return results, errors.Join(errs...)
}

// align widens [from, to) to whole periods of the UTC clock.
func align(from, to time.Time, period time.Duration) (time.Time, time.Time) {
	f := from.UTC().Truncate(period)
	t := to.UTC().Truncate(period)
	if t.Before(to) {
		t = t.Add(period)
	}
	return f, t
}

// call runs one paginated GetMetricData for the results at idx (one period).
func (c *Client) call(ctx context.Context, results []Result, idx []int, w *metrics.Writer) error {
	first := results[idx[0]]
	queries := make([]types.MetricDataQuery, len(idx))
	byID := make(map[string]*Result, len(idx))
	for j, i := range idx {
		r := &results[i]
		byID[r.ID] = r
		s := r.Spec
		names := make([]string, 0, len(s.Dimensions))
		for k := range s.Dimensions {
			names = append(names, k)
		}
		sort.Strings(names)
		dims := make([]types.Dimension, len(names))
		for k, n := range names {
			dims[k] = types.Dimension{Name: aws.String(n), Value: aws.String(s.Dimensions[n])}
		}
		queries[j] = types.MetricDataQuery{
			Id: aws.String(r.ID),
			MetricStat: &types.MetricStat{
				Metric: &types.Metric{Namespace: aws.String(s.Namespace), MetricName: aws.String(s.Metric), Dimensions: dims},
				Period: aws.Int32(int32(s.Period / time.Second)),
				Stat:   aws.String(s.Stat),
			},
			ReturnData: aws.Bool(true),
		}
	}
	in := &cw.GetMetricDataInput{
		StartTime:         aws.Time(first.From),
		EndTime:           aws.Time(first.To),
		MetricDataQueries: queries,
		ScanBy:            types.ScanByTimestampAscending,
	}
	if c.cfg.MaxDatapoints > 0 {
		in.MaxDatapoints = aws.Int32(c.cfg.MaxDatapoints)
	}
	pager := cw.NewGetMetricDataPaginator(c.api, in, func(o *cw.GetMetricDataPaginatorOptions) {
		o.StopOnDuplicateToken = true
	})
	failed := func(err error) error {
		for _, i := range idx {
			r := &results[i]
			r.Complete, r.failed = false, true
			r.Messages = append(r.Messages, "request failed: "+err.Error())
		}
		return fmt.Errorf("cloudwatch: GetMetricData for %d metrics (%s...): %w", len(idx), first.Spec, err)
	}
	for page := 1; pager.HasMorePages(); page++ {
		out, err := pager.NextPage(ctx)
		if err != nil {
			return failed(fmt.Errorf("page %d: %w", page, err))
		}
		var general []string
		for _, m := range out.Messages {
			general = append(general, message(m))
		}
		for _, res := range out.MetricDataResults {
			r := byID[aws.ToString(res.Id)]
			if r == nil {
				continue // not ours: CloudWatch answers only what was asked
			}
			r.Status = string(res.StatusCode)
			for _, m := range res.Messages {
				r.Messages = appendNew(r.Messages, message(m))
			}
			if len(res.Timestamps) != len(res.Values) {
				r.Messages = append(r.Messages, fmt.Sprintf("page %d: %d timestamps for %d values (dropped)", page, len(res.Timestamps), len(res.Values)))
				r.lost = true
				continue
			}
			for k, ts := range res.Timestamps {
				if err := w.Sample(r.Metric, r.Labels, ts, res.Values[k]); err != nil {
					r.Messages = appendNew(r.Messages, err.Error())
					r.lost = true
					break
				}
				r.Datapoints++
			}
		}
		for _, i := range idx {
			results[i].Messages = appendNew(results[i].Messages, general...)
		}
	}
	for _, i := range idx {
		r := &results[i]
		r.Complete = r.Status == string(types.StatusCodeComplete) && !r.lost
		if !r.Complete && r.Status != "" {
			r.Messages = appendNew(r.Messages, "last status "+r.Status)
		}
	}
	return nil
}

func message(m types.MessageData) string {
	return aws.ToString(m.Code) + ": " + aws.ToString(m.Value)
}

// appendNew appends the strings of add not already in list.
func appendNew(list []string, add ...string) []string {
	for _, a := range add {
		dup := false
		for _, l := range list {
			if l == a {
				dup = true
				break
			}
		}
		if !dup {
			list = append(list, a)
		}
	}
	return list
}
