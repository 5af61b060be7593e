package cloudwatch

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fake server answers GetMetricData as CloudWatch does for this SDK
// version: Smithy RPC v2 CBOR, awsQueryCompatible errors, NextToken paging
// once a page holds MaxDatapoints datapoints.
const (
	rpcPath              = "/service/GraniteServiceVersion20100801/operation/GetMetricData"
	defaultMaxDatapoints = 100800 // CloudWatch's default MaxDatapoints
)

// fakePoint is one datapoint the fake holds.
type fakePoint struct {
	T time.Time
	V float64
}

// fakeRequest is what the fake saw of one request.
type fakeRequest struct {
	Token         string // NextToken sent ("" on the first page)
	MaxDatapoints uint64
	Attempt       string // the SDK's amz-sdk-request header ("attempt=2; max=5")
	Auth          string // Authorization header
	Body          map[string]any
	Answer        string // "page", "Throttling", "AccessDenied", ...
}

// fakeCloudWatch serves CPUUtilization of the instances in data.
type fakeCloudWatch struct {
	t *testing.T

	mu   sync.Mutex
	data map[string][]fakePoint // by InstanceId, time-ordered
	// errors answers request n (1-based, counting retries) with an error code
	// of the query protocol: "Throttling", "AccessDenied", "InternalFailure".
	errors map[int]string
	// partial lists instances whose LAST page says PartialData (CloudWatch
	// could not return everything) instead of Complete.
	partial map[string]bool
	// internal lists instances whose answer is InternalError.
	internal map[string]bool
	// region is the one requests must be signed for (default us-east-1).
	region string
	reqs   []fakeRequest
}

func newFake(t *testing.T, data map[string][]fakePoint) (*fakeCloudWatch, *httptest.Server) {
	f := &fakeCloudWatch{t: t, data: data, errors: map[int]string{}, partial: map[string]bool{}, internal: map[string]bool{}, region: "us-east-1"}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeCloudWatch) requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.reqs...)
}

func (f *fakeCloudWatch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.t
	// The protocol's request shape.
	if r.Method != http.MethodPost || r.URL.Path != rpcPath {
		t.Errorf("request %s %s, want POST %s", r.Method, r.URL.Path, rpcPath)
		writeError(w, http.StatusNotFound, "UnknownOperationException", "", "no such operation")
		return
	}
	for h, want := range map[string]string{
		"Smithy-Protocol":   "rpc-v2-cbor",
		"Content-Type":      "application/cbor",
		"Accept":            "application/cbor",
		"X-Amzn-Query-Mode": "true",
	} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("header %s = %q, want %q", h, got, want)
		}
	}
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=") || !strings.Contains(auth, "/"+f.region+"/monitoring/aws4_request") {
		t.Errorf("Authorization = %q, want a SigV4 signature for %s/monitoring", auth, f.region)
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("reading body: %v", err)
		return
	}
	v, err := cborDecode(raw)
	if err != nil {
		t.Errorf("request body is not CBOR: %v", err)
		writeError(w, http.StatusBadRequest, "SerializationException", "", err.Error())
		return
	}
	in, _ := v.(map[string]any)
	req := fakeRequest{Attempt: r.Header.Get("Amz-Sdk-Request"), Auth: auth, Body: in}
	req.Token, _ = in["NextToken"].(string)
	req.MaxDatapoints, _ = in["MaxDatapoints"].(uint64)
	n := len(f.reqs) + 1
	if code := f.errors[n]; code != "" {
		req.Answer = code
		f.reqs = append(f.reqs, req)
		switch code {
		case "Throttling":
			writeError(w, http.StatusBadRequest, "Throttling", "Throttling;Sender", "Rate exceeded")
		case "AccessDenied":
			writeError(w, http.StatusForbidden, "AccessDenied", "AccessDenied;Sender",
				"User: arn:aws:iam::123456789012:user/oncall is not authorized to perform: cloudwatch:GetMetricData")
		default:
			writeError(w, http.StatusInternalServerError, code, code+";Receiver", "internal failure")
		}
		return
	}
	req.Answer = "page"
	f.reqs = append(f.reqs, req)
	out, err := f.page(in)
	if err != nil {
		t.Errorf("request %d: %v", n, err)
		writeError(w, http.StatusBadRequest, "InvalidParameterValue", "InvalidParameterValue;Sender", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/cbor")
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("X-Amzn-Requestid", "req-"+strconv.Itoa(n))
	_, _ = w.Write(cborEncode(out))
}

// writeError answers as an awsQueryCompatible rpcv2Cbor service: the body's
// __type and message, and the query-era code in X-Amzn-Query-Error.
func writeError(w http.ResponseWriter, status int, typ, queryError, msg string) {
	w.Header().Set("Content-Type", "application/cbor")
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	if queryError != "" {
		w.Header().Set("X-Amzn-Query-Error", queryError)
	}
	w.WriteHeader(status)
	_, _ = w.Write(cborEncode(map[string]any{"__type": "com.amazonaws.cloudwatch#" + typ, "message": msg}))
}

// entry is one datapoint of one query in answer order.
type entry struct {
	query int
	p     fakePoint
}

// page builds one GetMetricData answer: the datapoints of all queries,
// query by query, in time order, cut into pages of MaxDatapoints.
func (f *fakeCloudWatch) page(in map[string]any) (map[string]any, error) {
	start, err := epoch(in["StartTime"])
	if err != nil {
		return nil, fmt.Errorf("StartTime: %w", err)
	}
	end, err := epoch(in["EndTime"])
	if err != nil {
		return nil, fmt.Errorf("EndTime: %w", err)
	}
	if in["ScanBy"] != "TimestampAscending" {
		return nil, fmt.Errorf("ScanBy = %v, want TimestampAscending", in["ScanBy"])
	}
	qs, _ := in["MetricDataQueries"].([]any)
	if len(qs) == 0 || len(qs) > 500 {
		return nil, fmt.Errorf("%d queries", len(qs))
	}
	type query struct {
		id, instance string
		last         int // index in entries of its last datapoint, -1 if none
	}
	var (
		queries []query
		entries []entry
	)
	for i, q := range qs {
		m, _ := q.(map[string]any)
		id, _ := m["Id"].(string)
		stat, _ := m["MetricStat"].(map[string]any)
		metric, _ := stat["Metric"].(map[string]any)
		if metric["Namespace"] != "AWS/EC2" || metric["MetricName"] != "CPUUtilization" || stat["Stat"] != "Average" || stat["Period"] != uint64(60) {
			return nil, fmt.Errorf("query %s: unexpected MetricStat %v", id, stat)
		}
		dims, _ := metric["Dimensions"].([]any)
		if len(dims) != 1 {
			return nil, fmt.Errorf("query %s: dimensions %v", id, dims)
		}
		d, _ := dims[0].(map[string]any)
		if d["Name"] != "InstanceId" {
			return nil, fmt.Errorf("query %s: dimension %v", id, d)
		}
		inst, _ := d["Value"].(string)
		qq := query{id: id, instance: inst, last: -1}
		for _, p := range f.data[inst] {
			if !p.T.Before(start) && p.T.Before(end) {
				entries = append(entries, entry{query: i, p: p})
				qq.last = len(entries) - 1
			}
		}
		queries = append(queries, qq)
	}
	offset := 0
	if tok, ok := in["NextToken"].(string); ok {
		if offset, err = strconv.Atoi(strings.TrimPrefix(tok, "tok-")); err != nil || !strings.HasPrefix(tok, "tok-") {
			return nil, fmt.Errorf("bad NextToken %q", tok)
		}
	}
	size := defaultMaxDatapoints
	if md, ok := in["MaxDatapoints"].(uint64); ok && md > 0 {
		size = int(md)
	}
	stop := min(offset+size, len(entries))
	results := map[int]map[string]any{}
	var order []int
	result := func(qi int) map[string]any {
		if r := results[qi]; r != nil {
			return r
		}
		r := map[string]any{"Id": queries[qi].id, "Label": "CPUUtilization", "Timestamps": []any{}, "Values": []any{}}
		results[qi] = r
		order = append(order, qi)
		return r
	}
	if offset == 0 {
		for qi, q := range queries {
			if q.last < 0 { // no data at all: answered once, complete
				result(qi)
			}
		}
	}
	for _, e := range entries[offset:stop] {
		r := result(e.query)
		r["Timestamps"] = append(r["Timestamps"].([]any), e.p.T)
		r["Values"] = append(r["Values"].([]any), e.p.V)
	}
	for _, qi := range order {
		q, r := queries[qi], results[qi]
		switch {
		case f.internal[q.instance]:
			r["StatusCode"] = "InternalError"
			r["Messages"] = []any{map[string]any{"Code": "InternalError", "Value": "try again"}}
		case q.last >= stop:
			r["StatusCode"] = "PartialData" // continues on the next page
		case f.partial[q.instance]:
			r["StatusCode"] = "PartialData"
			r["Messages"] = []any{map[string]any{"Code": "MaxQueryTimeRangeExceed", "Value": "too much data"}}
		default:
			r["StatusCode"] = "Complete"
		}
	}
	list := make([]any, len(order))
	for i, qi := range order {
		list[i] = results[qi]
	}
	out := map[string]any{"MetricDataResults": list, "Messages": []any{}}
	if stop < len(entries) {
		out["NextToken"] = "tok-" + strconv.Itoa(stop)
	}
	return out, nil
}

// epoch reads an rpcv2Cbor timestamp: tag 1 around epoch seconds.
func epoch(v any) (time.Time, error) {
	tag, ok := v.(cborTag)
	if !ok || tag.Num != 1 {
		return time.Time{}, fmt.Errorf("not a tag-1 timestamp: %#v", v)
	}
	switch s := tag.V.(type) {
	case float64:
		return time.UnixMilli(int64(s * 1000)).UTC(), nil
	case uint64:
		return time.Unix(int64(s), 0).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("timestamp of type %T", tag.V)
}
