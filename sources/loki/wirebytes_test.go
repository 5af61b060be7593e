package loki

import (
	"context"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

// Loki gzips its answers; what a query cost the network is the gzip, not
// the JSON it unpacks to. The client asks for gzip, counts both, and its
// costs (WireBytes) are the bytes that crossed the wire. Before, Go's
// transport unpacked the answers unseen and every cost counted the JSON
// (77.2 MB where 4.07 MB crossed the wire on the simulated day).
func TestResponseBytesAreWireBytes(t *testing.T) {
	f := lokitest.New(t)
	load24h(f, t0)
	c, _ := newTestClient(t, f.URL(), nil)
	col := newCollector(t)
	res, err := c.Pull(context.Background(), `{job="caddy"}`, "", t0, t0.Add(2*time.Hour), col.sink)
	if err != nil {
		t.Fatal(err)
	}
	wire, decoded := c.ResponseBytes()
	_, written := f.Stats()
	var json int64
	for _, n := range written {
		json += n
	}
	if decoded != json {
		t.Errorf("unpacked %d bytes, the fake wrote %d bytes of JSON", decoded, json)
	}
	if wire != res.WireBytes() || wire <= 0 || 2*wire >= decoded {
		t.Errorf("wire %d, result's WireBytes %d, unpacked %d: want the result to cost the gzipped bytes, well under the JSON", wire, res.WireBytes(), decoded)
	}
	for _, h := range f.Headers() {
		if h.Get("Accept-Encoding") != "gzip" {
			t.Fatalf("request without Accept-Encoding: gzip: %v", h)
		}
	}
}
