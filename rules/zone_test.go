package rules

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// TestSecondReadKeepsTheZone: a log written with Caddy's time_format wall has
// no zone in its times; the rules' own read of the logs must place them in
// the zone the analysis read them in, or every line falls outside the window
// (here by nine hours) and the backtest counts nothing.
func TestSecondReadKeepsTheZone(t *testing.T) {
	seoul, err := time.LoadLocation("Asia/Seoul")
	if err != nil {
		t.Fatal(err)
	}
	line := `{"level":"info","ts":"2026/10/03 02:10:00.000","logger":"http.log.access","msg":"handled request","request":{"remote_ip":"203.0.113.7","remote_port":"51234","client_ip":"203.0.113.7","proto":"HTTP/2.0","method":"GET","host":"wiki.example.org","uri":"/index.php?title=Main_Page","headers":{"User-Agent":["Mozilla/5.0"]}},"bytes_read":0,"user_id":"","duration":0.12,"size":5120,"status":200,"resp_headers":{"Content-Type":["text/html; charset=UTF-8"]}}` + "\n"
	path := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 10, 3, 2, 10, 0, 0, seoul)
	for _, tc := range []struct {
		zone *time.Location
		want time.Time
	}{{seoul, want}, {nil, time.Date(2026, 10, 3, 2, 10, 0, 0, time.UTC)}} {
		in := &Input{Access: []string{path}, Zone: tc.zone}
		var got []time.Time
		if _, err := in.readRequests(context.Background(), nil, nil, func(rs []sources.Request) error {
			for _, r := range rs {
				got = append(got, r.Time)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || !got[0].Equal(tc.want) {
			t.Errorf("zone %v: read %v, want %v", tc.zone, got, tc.want)
		}
	}
}
