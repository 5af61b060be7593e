package caddylog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/valyala/fastjson"

	"github.com/aftermath-forensics/aftermath/sources"
	"github.com/aftermath-forensics/aftermath/sources/testenv"
)

// TestDecodeIsEncodingJSONs: decode reads every line as encoding/json.Unmarshal
// into a line does, the lines fastjson reads (Caddy's) and the ones it leaves
// to encoding/json alike: a key spelled in another case or given twice, a
// field of another type, null, \u escapes (half a surrogate pair becomes
// U+FFFD), invalid UTF-8, numbers out of range, text that is not JSON.
func TestDecodeIsEncodingJSONs(t *testing.T) {
	deep := strings.Repeat(`[`, 400) + strings.Repeat(`]`, 400)
	lines := []string{
		`{"level":"info","ts":1795966707.79998,"logger":"http.handlers.reverse_proxy.health_checker.active","msg":"HTTP request failed","host":"127.0.0.1:9000","error":"Get \"http://127.0.0.1:9000/healthz.php\": i/o timeout"}`,
		`{"level":"error","ts":1795966709.84,"logger":"http.log.error.log0","msg":"no upstreams available","request":{"uri":"/w/A","ts":5,"headers":{"Sec-Ch-Ua":["\"Chromium\";v=\"129\""]}}}`,
		`{"ts":1,"TS":2}`, `{"TS":2,"ts":1}`, `{"Logger":"x","ts":1}`, `{"ts":1,"msg":"a","msg":"b"}`, `{"ts":1,"ts":2}`,
		`{"ts":null,"msg":null}`, `{"ts":"1795966709.84"}`, `{"ts":1,"logger":5}`, `{"ts":1,"host":["a"]}`, `{"ts":1,"error":{}}`, `{"ts":true}`,
		`{"ts":1,"msg":"caf\u00e9"}`, `{"ts":1,"msg":"\ud800"}`, `{"ts":1,"msg":"\ud83d\ude00"}`, "{\"ts\":1,\"msg\":\"\xff\xfe\"}", "{\"ts\":1,\"msg\":\"a\x01b\"}",
		`{"ts":1e400}`, `{"ts":-0}`, `{"ts":1E2,"msg":"\/\b\f\n\r\t\\"}`, `{"ts":01}`, `{"ts":1.}`, `{"ts":.5}`, `{"ts":NaN}`,
		`[1,2]`, `"ts"`, `null`, `5`, `{}`, `{"ts":1}x`, `{"ts":1,}`, `{'ts':1}`, `not json at all`, `{"ts":1,"deep":` + deep + `}`,
		`{"ts":1,"msg":"\u0041"}`, `{"ts":1, "host" : "h" , "error":""}`, "{\"ts\":1}\t",
	}
	sameAsEncodingJSON(t, lines)
	// The lab's lines are Caddy's: fastjson reads them, not encoding/json.
	t.Run("the lab's log", func(t *testing.T) {
		r, err := sources.Open(testenv.LabIncident(t, "logs/caddy.log.gz"))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var lab []string
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), maxLine)
		for sc.Scan() {
			lab = append(lab, sc.Text())
		}
		if plain := sameAsEncodingJSON(t, lab); plain != len(lab) {
			t.Errorf("fastjson read %d of the lab's %d lines", plain, len(lab))
		}
	})
}

// sameAsEncodingJSON fails t for each line decode reads otherwise than
// encoding/json, and returns how many lines fastjson read.
func sameAsEncodingJSON(t *testing.T, lines []string) (plain int) {
	t.Helper()
	var p fastjson.Parser
	for _, s := range lines {
		b := bytes.TrimSpace([]byte(s))
		var want line
		wantErr := json.Unmarshal(b, &want)
		got, err := decode(&p, b)
		if (err != nil) != (wantErr != nil) || err == nil && got != want {
			t.Errorf("%.120s: decoded %+v (error %v), want %+v (error %v)", s, got, err, want, wantErr)
		}
		if _, ok := decodePlain(&p, b); ok {
			plain++
		}
	}
	return plain
}
