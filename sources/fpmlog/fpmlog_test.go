package fpmlog

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestReadFile(t *testing.T) {
	tests := []struct {
		name      string
		log       string
		wantFound bool
		want      []string
	}{
		{"overload", `[03-Oct-2026 02:20:01] NOTICE: fpm is running, pid 7
[03-Oct-2026 02:20:11] WARNING: [pool www] server reached pm.max_children setting (16), consider raising it
[03-Oct-2026 02:21:40] WARNING: [pool www] child 42, script '/srv/w/index.php' (request: "GET /w/index.php") executing too slow (5.012 sec), logging
`, true, []string{MaxChildren, Slow}},
		{"quiet", "[29-Nov-2026 15:33:54] NOTICE: ready to handle connections\n", true, nil},
		{"not php-fpm", `{"level":"info","ts":1795966434.79}` + "\n", false, nil},
	}
	seoul, _ := time.LoadLocation("Asia/Seoul")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "php-fpm.log")
			os.WriteFile(p, []byte(tt.log), 0o644)
			evs, found, err := ReadFile(p, seoul)
			// The same log compressed reads the same.
			var zbuf bytes.Buffer
			zw := gzip.NewWriter(&zbuf)
			zw.Write([]byte(tt.log))
			zw.Close()
			pz := p + ".gz"
			os.WriteFile(pz, zbuf.Bytes(), 0o644)
			if zevs, zfound, zerr := ReadFile(pz, seoul); zerr != nil || zfound != found || len(zevs) != len(evs) {
				t.Errorf("gzip: found %v events %d err %v; plain: found %v events %d", zfound, len(zevs), zerr, found, len(evs))
			}
			if err != nil {
				t.Fatal(err)
			}
			if found != tt.wantFound || len(evs) != len(tt.want) {
				t.Fatalf("found %v events %+v", found, evs)
			}
			for i, e := range evs {
				if e.Kind != tt.want[i] || e.Pool != "www" {
					t.Errorf("event %d = %+v, want kind %s", i, e, tt.want[i])
				}
			}
			if len(evs) > 0 && !evs[0].Time.Equal(time.Date(2026, 10, 2, 17, 20, 11, 0, time.UTC)) {
				t.Errorf("time %v: local time in Asia/Seoul not honoured", evs[0].Time)
			}
		})
	}
}
