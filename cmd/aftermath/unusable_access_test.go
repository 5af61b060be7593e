package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aftermath-forensics/aftermath/sources/accesslog"
)

// TestAnalyzeUnusableAccessLog: an access log that yields no usable line (here
// the lab sample's requests as nginx writes them) is exit 2 with a message
// that names the file and says what it looks like, not a report of a quiet site.
func TestAnalyzeUnusableAccessLog(t *testing.T) {
	sample, err := os.ReadFile("../../sources/accesslog/testdata/lab-sample.log")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(sample)), "\n") {
		var l struct {
			TS      float64 `json:"ts"`
			Request struct {
				ClientIP string `json:"client_ip"`
				Method   string
				URI      string
				Proto    string
			}
			Status, Size int
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		ts := time.Unix(int64(l.TS), 0).UTC()
		fmt.Fprintf(&b, "%s - - [%s] %q %d %d \"-\" \"curl/7.88.1\"\n", l.Request.ClientIP, ts.Format("02/Jan/2006:15:04:05 -0700"),
			l.Request.Method+" "+l.Request.URI+" "+l.Request.Proto, l.Status, l.Size)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "nginx.log")
	if err := os.WriteFile(log, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	args := []string{"analyze", "--access", log, "--from", "2026-11-29T15:30:00Z", "--to", "2026-11-29T15:50:00Z", "--out", out}
	if code := runQuiet(t, args); code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	root := newRootCmd()
	root.SetArgs(args)
	root.SilenceErrors, root.SilenceUsage = true, true
	err = root.Execute()
	var ue *accesslog.UnusableError
	if !errors.As(err, &ue) {
		t.Fatalf("err = %v, want an accesslog.UnusableError", err)
	}
	for _, want := range []string{log + ": no line could be read (first unusable line 1)", "looks like nginx/Apache combined log format", "log { format json }"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "report.json")); err == nil {
		t.Errorf("a report was written for an unusable log")
	}
}
