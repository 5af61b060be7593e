package bundle

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

func TestMinuteStatusRoundTrip(t *testing.T) {
	m := time.Date(2026, 10, 3, 2, 26, 0, 0, time.UTC)
	rows := []MinuteStatus{
		{Minute: m, Status: 200, Origin: sources.OriginUpstream, Requests: 812, PHPSeconds: 301.25},
		{Minute: m, Status: 200, Origin: sources.OriginUpstream, Late: true, Requests: 3, PHPSeconds: 41.5},
		{Minute: m, Status: 503, Origin: sources.OriginProxy, Requests: 1292},
		{Minute: m.Add(time.Minute), Status: 304, Origin: sources.OriginStatic, Requests: 7},
	}
	var buf bytes.Buffer
	if err := WriteMinuteStatus(&buf, rows); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "minute-status.csv")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadMinuteStatus(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Errorf("read back\n%v\nwant\n%v", got, rows)
	}
}

func TestMinuteStatusErrorsNameTheLine(t *testing.T) {
	const header = "minute,status,origin,late,requests,php_seconds\n"
	const good = "2026-10-03T02:26:00Z,200,upstream,0,5,1.5\n"
	tests := []struct {
		name, body, want string
	}{
		{"no header", good, ":1: want the header"},
		{"minute not whole", header + "2026-10-03T02:26:30Z,200,upstream,0,5,1.5\n", ":2: minute:"},
		{"status", header + good + "2026-10-03T02:27:00Z,20x,upstream,0,5,1.5\n", ":3: status:"},
		{"origin", header + "2026-10-03T02:26:00Z,200,php,0,5,1.5\n", ":2: origin:"},
		{"late", header + "2026-10-03T02:26:00Z,200,upstream,yes,5,1.5\n", ":2: late:"},
		{"negative count", header + "2026-10-03T02:26:00Z,200,upstream,0,-5,1.5\n", ":2: requests:"},
		{"NaN seconds", header + "2026-10-03T02:26:00Z,200,upstream,0,5,NaN\n", ":2: php_seconds:"},
		{"short row", header + "2026-10-03T02:26:00Z,200,upstream\n", "wrong number of fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "minute-status.csv")
			if err := os.WriteFile(path, []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadMinuteStatus(path)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %v, want one naming %s and %q", err, path, tt.want)
			}
		})
	}
}
