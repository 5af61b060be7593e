package simulate

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/valyala/fastjson"
)

// decodeLine fills l from one access-log line as json.Unmarshal into a line
// would, with fastjson's parser: reading the bundles' lines with
// encoding/json was 42% of this package's test CPU (15 of 36 s sampled),
// every line validated once and then decoded by reflection. A field absent
// or null stays nil or zero; a field of the wrong type is an error, as
// json.Unmarshal's; keys match exactly (json.Unmarshal would also take
// another case). TestDecodeLineIsUnmarshal holds the two to one another.
func decodeLine(p *fastjson.Parser, raw []byte, l *line) error {
	return decodeLineKeeping(p, raw, l, nil)
}

// decodeLineKeeping is decodeLine keeping in the header maps only the
// names keep holds (every name when keep is nil): each header is still
// checked to be a list of strings, as decodeLine checks it, but one a test
// does not read is not copied (the maps were most of the allocation of a
// test that reads three headers of every line).
func decodeLineKeeping(p *fastjson.Parser, raw []byte, l *line, keep map[string]bool) error {
	v, err := p.ParseBytes(raw)
	if err != nil {
		return err
	}
	o, err := v.Object()
	if err != nil {
		return err
	}
	*l = line{}
	return visitFields(o, "", func(k string, x *fastjson.Value) (err error) {
		switch k {
		case "level":
			l.Level, err = str(x)
		case "ts":
			var ts logTS
			err = ts.UnmarshalJSON(x.MarshalTo(nil))
			l.TS = &ts
		case "logger":
			l.Logger, err = str(x)
		case "msg":
			l.Msg, err = str(x)
		case "request":
			err = decodeRequest(x, l, keep)
		case "bytes_read":
			l.BytesRead, err = intPtr(x)
		case "user_id":
			var s string
			s, err = str(x)
			l.UserID = &s
		case "duration":
			var f float64
			f, err = x.Float64()
			l.Duration = &f
		case "size":
			l.Size, err = intPtr(x)
		case "status":
			l.Status, err = x.Int()
		case "resp_headers":
			l.RespHeaders, err = headers(x, keep)
		}
		return err
	})
}

func decodeRequest(x *fastjson.Value, l *line, keep map[string]bool) error {
	o, err := x.Object()
	if err != nil {
		return err
	}
	req := &lineRequest{}
	l.Request = req
	return visitFields(o, "request.", func(k string, x *fastjson.Value) (err error) {
		switch k {
		case "remote_ip":
			req.RemoteIP, err = str(x)
		case "remote_port":
			req.RemotePort, err = str(x)
		case "client_ip":
			req.ClientIP, err = str(x)
		case "proto":
			req.Proto, err = str(x)
		case "method":
			req.Method, err = str(x)
		case "host":
			req.Host, err = str(x)
		case "uri":
			req.URI, err = str(x)
		case "headers":
			req.Headers, err = headers(x, keep)
		}
		return err
	})
}

// visitFields calls field for each member of o that is not null, as
// json.Unmarshal leaves a field alone for null, and stops at the first
// error, named with prefix and the member's key.
func visitFields(o *fastjson.Object, prefix string, field func(k string, x *fastjson.Value) error) error {
	var firstErr error
	o.Visit(func(k []byte, x *fastjson.Value) {
		if firstErr != nil || x.Type() == fastjson.TypeNull {
			return
		}
		if err := field(string(k), x); err != nil {
			firstErr = fmt.Errorf("%s%s: %w", prefix, k, err)
		}
	})
	return firstErr
}

func str(x *fastjson.Value) (string, error) {
	b, err := x.StringBytes()
	return string(b), err
}

func intPtr(x *fastjson.Value) (*int, error) {
	n, err := x.Int()
	return &n, err
}

// headers is a header map as Caddy logs it: each name to a list of strings,
// the names keep holds only (all when keep is nil); every header is checked.
func headers(x *fastjson.Value, keep map[string]bool) (map[string][]string, error) {
	o, err := x.Object()
	if err != nil {
		return nil, err
	}
	size := o.Len()
	if keep != nil {
		size = min(size, len(keep))
	}
	h := make(map[string][]string, size)
	o.Visit(func(k []byte, x *fastjson.Value) {
		if err != nil {
			return
		}
		kept := keep == nil || keep[string(k)]
		if x.Type() == fastjson.TypeNull {
			if kept {
				h[string(k)] = nil
			}
			return
		}
		var vs []*fastjson.Value
		if vs, err = x.Array(); err != nil {
			err = fmt.Errorf("header %s: %w", k, err)
			return
		}
		var list []string
		if kept {
			list = make([]string, len(vs))
		}
		for i, v := range vs {
			if v.Type() == fastjson.TypeNull {
				continue // "", as json.Unmarshal reads a null in a []string
			}
			if !kept && v.Type() == fastjson.TypeString {
				// A string, all the check needs: StringBytes would also
				// unescape it, for nothing.
				continue
			}
			b, e := v.StringBytes()
			if e != nil {
				err = fmt.Errorf("header %s: %w", k, e)
				return
			}
			if kept {
				list[i] = string(b)
			}
		}
		if kept {
			h[string(k)] = list
		}
	})
	return h, err
}

// TestDecodeLineIsUnmarshal: decodeLine reads what json.Unmarshal reads of
// every line of a shared bundle, and of lines that are not as Caddy writes
// them (a field absent, null or of the wrong type), where both fail or
// neither does; decodeLineKeeping fails where decodeLine does, a header it
// does not keep included, and reads the same but for the headers left out.
func TestDecodeLineIsUnmarshal(t *testing.T) {
	t.Parallel()
	sum := seedOne(t, "crawler-backlog")
	var p fastjson.Parser
	check := func(where string, raw []byte) {
		t.Helper()
		var want, got line
		wantErr := json.Unmarshal(raw, &want)
		gotErr := decodeLine(&p, raw, &got)
		if (wantErr != nil) != (gotErr != nil) {
			t.Fatalf("%s: json.Unmarshal: %v, decodeLine: %v: %s", where, wantErr, gotErr, raw)
		}
		if wantErr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%s: json.Unmarshal %+v %+v, decodeLine %+v %+v: %s", where, want, want.Request, got, got.Request, raw)
		}
		var kept line
		keptErr := decodeLineKeeping(&p, raw, &kept, evidenceHeaders)
		if (keptErr != nil) != (gotErr != nil) {
			t.Fatalf("%s: decodeLine: %v, decodeLineKeeping: %v: %s", where, gotErr, keptErr, raw)
		}
		if gotErr != nil {
			return
		}
		got.RespHeaders = keepOnly(got.RespHeaders, evidenceHeaders)
		if got.Request != nil {
			req := *got.Request
			req.Headers = keepOnly(req.Headers, evidenceHeaders)
			got.Request = &req
		}
		if !reflect.DeepEqual(kept, got) {
			t.Fatalf("%s: decodeLine %+v %+v, decodeLineKeeping %+v %+v: %s", where, got, got.Request, kept, kept.Request, raw)
		}
	}
	n := 0
	readGz(t, filepath.Join(sum.Out, "access/access.log.gz"), func(raw []byte) {
		n++
		if n%7 == 0 { // a seventh of the lines: every kind of line is there
			check(fmt.Sprintf("line %d", n), raw)
		}
	})
	for _, raw := range []string{
		`{}`,
		`{"level":null,"ts":null,"request":null,"duration":null,"size":null,"user_id":null,"resp_headers":null}`,
		`{"ts":"2026-10-03T02:00:00.5+09:00","request":{"headers":{"A":null,"B":[]}},"user_id":"","bytes_read":0}`,
		`{"ts":1759424400123,"status":200,"resp_headers":{"X-Powered-By":["PHP/8.3"]}}`,
		`{"status":"200"}`,
		`{"status":200.5}`,
		`{"duration":"1"}`,
		`{"request":[]}`,
		`{"request":{"uri":1}}`,
		`{"request":{"headers":{"A":"x"}}}`,
		`{"request":{"headers":{"A":[1]}}}`,
		`{"request":{"headers":{"Cookie":[1]}}}`,
		`{"request":{"headers":{"User-Agent":["x"],"A":[null]}}}`,
		`{"resp_headers":{"Server":"Caddy","X-Powered-By":["PHP/8.3"]}}`,
		`{"resp_headers":[]}`,
		`{"user_id":1}`,
		`[]`,
		`{"level":"info"`,
	} {
		check("crafted", []byte(raw))
	}
}

// keepOnly is h with only the names in keep; nil stays nil.
func keepOnly(h map[string][]string, keep map[string]bool) map[string][]string {
	if h == nil {
		return nil
	}
	out := map[string][]string{}
	for k, v := range h {
		if keep[k] {
			out[k] = v
		}
	}
	return out
}
