package cloudwatch

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	cw "github.com/aws/aws-sdk-go-v2/service/cloudwatch"

	"github.com/aftermath-forensics/aftermath/sources/metrics"
	"github.com/aftermath-forensics/aftermath/sources/metrics/promstore"
)

// Test credentials: distinctive strings so a leak is easy to find.
const (
	testKeyID  = "AKIDLEAKCHECK00001"
	testSecret = "s3cr3t/LEAK+check/Secret0000000000000000"
	testToken  = "SESSIONTOKEN-LEAK-CHECK"
)

var t0 = time.Date(2026, 10, 3, 5, 0, 0, 0, time.UTC)

func TestMetricName(t *testing.T) {
	tests := []struct{ ns, metric, stat, want string }{
		{"AWS/EC2", "CPUUtilization", "Average", "aws_ec2_cpuutilization_average"},
		{"aws/ec2", "CPUUtilization", "Maximum", "aws_ec2_cpuutilization_maximum"},
		{"AWS/ApplicationELB", "TargetResponseTime", "p99", "aws_applicationelb_targetresponsetime_p99"},
		{"AWS/EC2", "CPUUtilization", "p99.9", "aws_ec2_cpuutilization_p99_9"},
		{"AWS/RDS", "DatabaseConnections", "TM(10%:90%)", "aws_rds_databaseconnections_tm_10_90"},
		{"CWAgent", "mem_used_percent", "Average", "aws_cwagent_mem_used_percent_average"},
		{"MyApp/Web-Tier", "Queue.Depth", "Sum", "aws_myapp_web_tier_queue_depth_sum"},
	}
	for _, tt := range tests {
		if got := MetricName(tt.ns, tt.metric, tt.stat); got != tt.want {
			t.Errorf("MetricName(%q, %q, %q) = %q, want %q", tt.ns, tt.metric, tt.stat, got, tt.want)
		}
	}
}

func TestLabelName(t *testing.T) {
	tests := map[string]string{
		"InstanceId":           "instance_id",
		"AutoScalingGroupName": "auto_scaling_group_name",
		"DBInstanceIdentifier": "db_instance_identifier",
		"LoadBalancer":         "load_balancer",
		"CPUUtilization":       "cpu_utilization",
		"instance_id":          "instance_id",
		"host-name":            "host_name",
		"Volume.Id":            "volume_id",
		"1stDim":               "_1st_dim",
		"---":                  "dimension",
	}
	for in, want := range tests {
		if got := LabelName(in); got != want {
			t.Errorf("LabelName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name string
		spec MetricSpec
		err  string // "" when valid
	}{
		{"defaults", MetricSpec{Dimensions: map[string]string{"InstanceId": "i-1"}}, ""},
		{"high resolution", MetricSpec{Period: 10 * time.Second}, ""},
		{"five minutes", MetricSpec{Period: 5 * time.Minute}, ""},
		{"odd period", MetricSpec{Period: 90 * time.Second}, "multiple of 60s"},
		{"sub-second period", MetricSpec{Period: time.Millisecond}, "multiple of 60s"},
		{"labels collide", MetricSpec{Dimensions: map[string]string{"InstanceId": "a", "instance_id": "b"}}, "both map to label"},
		{"empty value", MetricSpec{Dimensions: map[string]string{"InstanceId": ""}}, "empty name or value"},
		{"stat without letters", MetricSpec{Stat: "%%"}, "must contain a letter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("Validate() = %v, want an error with %q", err, tt.err)
			}
		})
	}
	s := MetricSpec{Dimensions: map[string]string{"InstanceId": "i-0abc"}}.withDefaults()
	if got, want := s.String(), `AWS/EC2 CPUUtilization{InstanceId="i-0abc"} Average 1m0s`; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := s.Name(), "aws_ec2_cpuutilization_average"; got != want {
		t.Errorf("Name() = %q, want %q", got, want)
	}
}

// isolate keeps the developer's AWS environment out of a test.
func isolate(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, k := range []string{"AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_MAX_ATTEMPTS",
		"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_CLOUDWATCH", "AWS_RETRY_MODE"} {
		t.Setenv(k, "")
	}
}

// newTestClient returns a client of the fake with static credentials and a
// standard retryer that does not sleep.
func newTestClient(t *testing.T, endpoint string, cfg Config) *Client {
	t.Helper()
	isolate(t)
	cfg.Region = "us-east-1"
	cfg.Endpoint = endpoint
	cfg.Credentials = credentials.NewStaticCredentialsProvider(testKeyID, testSecret, testToken)
	c, err := New(context.Background(), cfg, func(o *cw.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 4
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
			so.RateLimiter = ratelimit.None
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// cpuData is CPU of three instances every minute from 10 minutes before t0
// to 70 after, with a burst from minute 30 to 39.
func cpuData() (map[string][]fakePoint, []string) {
	ids := []string{"i-0aaa", "i-0bbb", "i-0ccc"}
	data := map[string][]fakePoint{}
	for k, id := range ids {
		for m := -10; m < 70; m++ {
			v := float64(10*(k+1)) + float64((m+60)%7) + 0.25
			if m >= 30 && m < 40 {
				v = 90 + float64(k)
			}
			data[id] = append(data[id], fakePoint{T: t0.Add(time.Duration(m) * time.Minute), V: v})
		}
	}
	return data, ids
}

// valueAt is the fake's value of id at t.
func valueAt(data map[string][]fakePoint, id string, t time.Time) float64 {
	for _, p := range data[id] {
		if p.T.Equal(t) {
			return p.V
		}
	}
	return math.NaN()
}

func fetch(t *testing.T, c *Client, from, to time.Time) ([]Result, string, error) {
	t.Helper()
	var buf bytes.Buffer
	w := metrics.NewWriter(&buf)
	res, err := c.Fetch(context.Background(), from, to, w)
	if cerr := w.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	return res, buf.String(), err
}

// TestFetchPagesThrottlingOpenMetrics runs the real SDK against the fake:
// four pages of 50 datapoints, a throttling error before the first page and
// another before the second, and checks what reaches the bundle through PromQL.
func TestFetchPagesThrottlingOpenMetrics(t *testing.T) {
	data, ids := cpuData()
	fake, srv := newFake(t, data)
	fake.errors[1] = "Throttling"
	fake.errors[3] = "Throttling"
	c := newTestClient(t, srv.URL, Config{InstanceIDs: ids, MaxDatapoints: 50})

	// The window is widened to whole minutes: [t0, t0+60m).
	res, text, err := fetch(t, c, t0.Add(20*time.Second), t0.Add(59*time.Minute+30*time.Second))
	if err != nil {
		t.Fatal(err)
	}

	// The SDK retried each throttled call and paged with the tokens it got.
	reqs := fake.requests()
	var got []string
	for _, r := range reqs {
		got = append(got, fmt.Sprintf("%s/%s/%d", r.Answer, r.Token, r.MaxDatapoints))
	}
	want := []string{"Throttling//50", "page//50", "Throttling/tok-50/50", "page/tok-50/50", "page/tok-100/50", "page/tok-150/50"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("requests (answer/token/max) = %v, want %v", got, want)
	}
	if !strings.HasPrefix(reqs[1].Attempt, "attempt=2") || !strings.HasPrefix(reqs[3].Attempt, "attempt=2") {
		t.Errorf("retried requests carry %q and %q, want attempt=2", reqs[1].Attempt, reqs[3].Attempt)
	}
	start, _ := epoch(reqs[0].Body["StartTime"])
	end, _ := epoch(reqs[0].Body["EndTime"])
	if !start.Equal(t0) || !end.Equal(t0.Add(time.Hour)) {
		t.Errorf("asked for %s .. %s, want the window widened to %s .. %s", start, end, t0, t0.Add(time.Hour))
	}

	if len(res) != 3 {
		t.Fatalf("%d results, want 3", len(res))
	}
	for i, r := range res {
		if !r.Complete || r.Datapoints != 60 || r.Status != "Complete" {
			t.Errorf("result %d: complete=%t datapoints=%d status=%q messages=%v, want complete, 60, Complete", i, r.Complete, r.Datapoints, r.Status, r.Messages)
		}
		if r.Metric != "aws_ec2_cpuutilization_average" || r.Labels["instance_id"] != ids[i] {
			t.Errorf("result %d names %s %v", i, r.Metric, r.Labels)
		}
		rec := r.Record()
		if rec.Source != "cloudwatch" || !rec.Complete || rec.Series != 1 || !strings.Contains(rec.Note, "60 datapoints") ||
			rec.Query != fmt.Sprintf(`AWS/EC2 CPUUtilization{InstanceId=%q} Average 1m0s`, ids[i]) {
			t.Errorf("record %d = %+v", i, rec)
		}
	}
	if n := Notes(res); len(n) != 0 {
		t.Errorf("notes for a complete fetch: %v", n)
	}

	// The bundle's form, exactly.
	line := fmt.Sprintf("aws_ec2_cpuutilization_average{instance_id=\"i-0bbb\"} %v %d.000\n", valueAt(data, "i-0bbb", t0.Add(30*time.Minute)), t0.Add(30*time.Minute).Unix())
	if !strings.Contains(text, "# TYPE aws_ec2_cpuutilization_average unknown\n") || !strings.Contains(text, line) || !strings.HasSuffix(text, "# EOF\n") {
		t.Errorf("OpenMetrics lacks %q:\n%.600s", line, text)
	}

	// And through PromQL, as the detectors read it.
	store, err := promstore.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	st, err := store.LoadReader("cloudwatch.om", strings.NewReader(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Samples != 180 || st.Series != 3 {
		t.Errorf("loaded %d samples of %d series, want 180 of 3", st.Samples, st.Series)
	}
	series, err := store.QueryRange(context.Background(), "avg(aws_ec2_cpuutilization_average)", t0, t0.Add(59*time.Minute), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 1 || len(series[0].Points) != 60 {
		t.Fatalf("avg(...) = %v, want one series of 60 points", series)
	}
	for _, p := range series[0].Points {
		want := 0.0
		for _, id := range ids {
			want += valueAt(data, id, p.T)
		}
		want /= 3
		if math.Abs(p.V-want) > 1e-9 {
			t.Errorf("avg at %s = %v, want %v", p.T.Format("15:04"), p.V, want)
		}
	}
	if p := series[0].Points[35]; math.Abs(p.V-91) > 1e-9 {
		t.Errorf("avg during the burst = %v, want 91", p.V)
	}
}

// TestFetchIncomplete checks that only a Complete last status makes a
// result complete, and that a failed page keeps what came before it.
func TestFetchIncomplete(t *testing.T) {
	data, ids := cpuData()
	from, to := t0, t0.Add(time.Hour)

	t.Run("PartialData on the last page", func(t *testing.T) {
		fake, srv := newFake(t, data)
		fake.partial["i-0bbb"] = true
		c := newTestClient(t, srv.URL, Config{InstanceIDs: ids, MaxDatapoints: 50})
		res, _, err := fetch(t, c, from, to)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			wantComplete := ids[i] != "i-0bbb"
			if r.Complete != wantComplete || r.Datapoints != 60 {
				t.Errorf("%s: complete=%t datapoints=%d, want %t, 60", ids[i], r.Complete, r.Datapoints, wantComplete)
			}
		}
		notes := Notes(res)
		if len(notes) != 1 || !strings.Contains(notes[0].Message, "i-0bbb") || !strings.Contains(notes[0].Message, "MaxQueryTimeRangeExceed") {
			t.Errorf("notes = %v, want one about i-0bbb with CloudWatch's message", notes)
		}
		if rec := res[1].Record(); rec.Complete || !strings.Contains(rec.Note, "PartialData") {
			t.Errorf("record = %+v, want incomplete with the status", rec)
		}
	})

	t.Run("InternalError", func(t *testing.T) {
		fake, srv := newFake(t, data)
		fake.internal["i-0ccc"] = true
		c := newTestClient(t, srv.URL, Config{InstanceIDs: ids})
		res, _, err := fetch(t, c, from, to)
		if err != nil {
			t.Fatal(err)
		}
		if res[2].Complete || res[2].Status != "InternalError" || !res[0].Complete {
			t.Errorf("results = %+v", res)
		}
	})

	t.Run("a page fails", func(t *testing.T) {
		fake, srv := newFake(t, data)
		fake.errors[2] = "AccessDenied" // not retryable
		c := newTestClient(t, srv.URL, Config{InstanceIDs: ids, MaxDatapoints: 50})
		res, text, err := fetch(t, c, from, to)
		if err == nil || !strings.Contains(err.Error(), "AccessDenied") || !strings.Contains(err.Error(), "page 2") {
			t.Fatalf("err = %v, want AccessDenied on page 2", err)
		}
		if len(fake.requests()) != 2 {
			t.Errorf("%d requests, want 2 (AccessDenied is not retried)", len(fake.requests()))
		}
		total := 0
		for _, r := range res {
			total += r.Datapoints
			if r.Complete {
				t.Errorf("%s complete after a failed page", r.Spec)
			}
		}
		if total != 50 || strings.Count(text, "\naws_ec2") != 50 {
			t.Errorf("%d datapoints kept, want the first page's 50", total)
		}
	})

	t.Run("throttled until the retries run out", func(t *testing.T) {
		fake, srv := newFake(t, data)
		for n := 1; n <= 4; n++ {
			fake.errors[n] = "Throttling"
		}
		c := newTestClient(t, srv.URL, Config{InstanceIDs: ids})
		res, _, err := fetch(t, c, from, to)
		if err == nil || !strings.Contains(err.Error(), "Throttling") {
			t.Fatalf("err = %v, want Throttling", err)
		}
		if n := len(fake.requests()); n != 4 {
			t.Errorf("%d attempts, want 4", n)
		}
		if len(Notes(res)) != 3 {
			t.Errorf("notes = %v, want one per instance", Notes(res))
		}
	})
}

// TestCredentialsNeverShown checks that no string the package produces holds
// the secret key, the session token or the access key id.
func TestCredentialsNeverShown(t *testing.T) {
	data, ids := cpuData()
	fake, srv := newFake(t, data)
	fake.errors[1] = "AccessDenied"
	c := newTestClient(t, srv.URL, Config{InstanceIDs: ids})
	res, _, err := fetch(t, c, t0, t0.Add(time.Hour))
	if err == nil {
		t.Fatal("no error from AccessDenied")
	}
	// The signature did use them: the check below is not vacuous.
	if a := fake.requests()[0].Auth; !strings.Contains(a, testKeyID) {
		t.Fatalf("request not signed with the test key: %q", a)
	}

	cfg := c.cfg
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "cfg", cfg)
	outputs := map[string]string{
		"Config.String": cfg.String(),
		"%v":            fmt.Sprintf("%v", cfg),
		"%+v":           fmt.Sprintf("%+v", cfg),
		"%#v":           fmt.Sprintf("%#v", cfg),
		"slog":          logged.String(),
		"Client":        fmt.Sprintf("%v %s", c, c),
		"error":         err.Error(),
		"results":       fmt.Sprintf("%+v", res),
		"notes":         fmt.Sprintf("%+v", Notes(res)),
	}
	for _, r := range res {
		outputs["record "+r.ID] = fmt.Sprintf("%+v", r.Record())
	}
	for what, s := range outputs {
		for _, secret := range []string{testSecret, testToken, testKeyID} {
			if strings.Contains(s, secret) {
				t.Errorf("%s shows a credential: %s", what, s)
			}
		}
	}
	if !strings.Contains(cfg.String(), "REDACTED") {
		t.Errorf("String() = %s, want explicit credentials shown as REDACTED", cfg.String())
	}
}

// TestStandardChain resolves region and credentials from a profile of the
// shared files, as an on-call engineer's AWS_PROFILE would.
func TestStandardChain(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	cfgFile, credFile := filepath.Join(dir, "config"), filepath.Join(dir, "credentials")
	if err := os.WriteFile(cfgFile, []byte("[profile oncall]\nregion = ap-northeast-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	creds := fmt.Sprintf("[oncall]\naws_access_key_id = %s\naws_secret_access_key = %s\n", testKeyID, testSecret)
	if err := os.WriteFile(credFile, []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", cfgFile)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", credFile)

	data, ids := cpuData()
	fake, srv := newFake(t, data)
	fake.region = "ap-northeast-2"
	c, err := New(context.Background(), Config{Profile: "oncall", Endpoint: srv.URL, InstanceIDs: ids[:1]})
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := fetch(t, c, t0, t0.Add(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Complete || res[0].Datapoints != 10 {
		t.Errorf("result = %+v", res[0])
	}
	if a := fake.requests()[0].Auth; !strings.Contains(a, "Credential="+testKeyID+"/") {
		t.Errorf("Authorization = %q, want the profile's key", a)
	}
	if s := c.String(); strings.Contains(s, testSecret) || !strings.Contains(s, "standard chain") {
		t.Errorf("String() = %s", s)
	}
}

func TestNewErrors(t *testing.T) {
	isolate(t)
	if _, err := New(context.Background(), Config{Region: "us-east-1"}); err == nil || !strings.Contains(err.Error(), "nothing to fetch") {
		t.Errorf("no metrics: err = %v", err)
	}
	if _, err := New(context.Background(), Config{InstanceIDs: []string{"i-1"}}); err == nil || !strings.Contains(err.Error(), "no region") {
		t.Errorf("no region: err = %v", err)
	}
	if _, err := New(context.Background(), Config{Region: "us-east-1", Metrics: []MetricSpec{{Period: 7 * time.Second}}}); err == nil || !strings.Contains(err.Error(), "period") {
		t.Errorf("bad period: err = %v", err)
	}
	dup := Config{Region: "us-east-1", InstanceIDs: []string{"i-1"},
		Metrics: []MetricSpec{{Namespace: "aws/ec2", Dimensions: map[string]string{"InstanceId": "i-1"}}}}
	if _, err := New(context.Background(), dup); err == nil || !strings.Contains(err.Error(), "both become aws_ec2_cpuutilization_average") {
		t.Errorf("two specs, one series: err = %v", err)
	}
}
