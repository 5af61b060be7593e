package loki

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/aftermath-forensics/aftermath/sources/loki/lokitest"
)

const (
	testUser  = "tenant-user"
	testPass  = "s3cr3t-Pa55word"
	testToken = "tok-Very-Secret-0123456789"
)

func secretsIn(t *testing.T, what, s string) {
	t.Helper()
	basic := base64.StdEncoding.EncodeToString([]byte(testUser + ":" + testPass))
	for _, secret := range []string{testPass, testToken, basic} {
		if strings.Contains(s, secret) {
			t.Errorf("%s shows a credential: %s", what, s)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	env := map[string]string{
		EnvAddr: "https://logs.example.org", EnvUsername: testUser, EnvPassword: testPass,
		EnvBearerToken: "", EnvBearerTokenFile: "/run/token", EnvOrgID: "tenant1", EnvCACertPath: "/etc/ca.pem",
		EnvClientCertPath: "/etc/c.pem", EnvClientKeyPath: "/etc/k.pem", EnvTLSSkipVerify: "true",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	got := ConfigFromEnv()
	want := Config{Addr: "https://logs.example.org", Username: testUser, Password: testPass, BearerTokenFile: "/run/token",
		OrgID: "tenant1", CAFile: "/etc/ca.pem", CertFile: "/etc/c.pem", KeyFile: "/etc/k.pem", InsecureSkipVerify: true}
	if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) || got.Password != testPass {
		t.Errorf("ConfigFromEnv = %s", got)
	}
	t.Setenv(EnvTLSSkipVerify, "maybe")
	if ConfigFromEnv().InsecureSkipVerify {
		t.Error("an unparsable LOKI_TLS_SKIP_VERIFY must leave verification on")
	}
}

func TestConfigRedactsCredentials(t *testing.T) {
	cfg := Config{Addr: "https://" + testUser + ":" + testPass + "@logs.example.org/prefix", Username: testUser,
		Password: testPass, BearerToken: testToken, OrgID: "tenant1"}
	var slogBuf bytes.Buffer
	slog.New(slog.NewJSONHandler(&slogBuf, nil)).Info("config", "loki", cfg)
	js, _ := json.Marshal(cfg)
	ym, _ := yaml.Marshal(cfg)
	renderings := map[string]string{
		"%v": fmt.Sprintf("%v", cfg), "%+v": fmt.Sprintf("%+v", cfg), "%#v": fmt.Sprintf("%#v", cfg),
		"%s": fmt.Sprintf("%s", cfg), "pointer %v": fmt.Sprintf("%v", &cfg), "String": cfg.String(),
		"slog": slogBuf.String(), "json": string(js), "yaml": string(ym),
	}
	for name, s := range renderings {
		secretsIn(t, name, s)
	}
	if !strings.Contains(cfg.String(), `OrgID:"tenant1"`) || !strings.Contains(cfg.String(), `Password:"REDACTED"`) ||
		!strings.Contains(cfg.String(), "logs.example.org/prefix") {
		t.Errorf("String() hides too much: %s", cfg)
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no address", Config{}, "no address"},
		{"not http", Config{Addr: "ftp://" + testUser + ":" + testPass + "@x"}, "not an http(s) URL"},
		{"basic and bearer", Config{Addr: "http://x", Username: testUser, Password: testPass, BearerToken: testToken}, "mutually exclusive"},
		{"split too small", Config{Addr: "http://x", SplitBy: 30 * time.Second}, "split_by"},
		{"missing CA", Config{Addr: "https://x", CAFile: "/nonexistent/ca.pem"}, "CA file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			secretsIn(t, "error", err.Error())
		})
	}
}

func TestAuthHeaders(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(testUser+":"+testPass))
	tests := []struct {
		name      string
		cfg       Config
		wantAuth  string
		wantOrgID string
	}{
		{"none", Config{}, "", ""},
		{"basic", Config{Username: testUser, Password: testPass}, basic, ""},
		{"basic from URL", Config{Addr: "user-in-url"}, basic, ""},
		{"bearer", Config{BearerToken: testToken}, "Bearer " + testToken, ""},
		{"bearer file", Config{BearerTokenFile: tokenFile}, "Bearer " + testToken, ""},
		{"org id", Config{OrgID: "tenant1|tenant2"}, "", "tenant1|tenant2"},
		{"bearer and org", Config{BearerToken: testToken, OrgID: "t"}, "Bearer " + testToken, "t"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := lokitest.New(t)
			f.Push(streamA, t0, "x")
			cfg := tt.cfg
			if cfg.Addr == "user-in-url" {
				cfg.Addr = strings.Replace(f.URL(), "://", "://"+testUser+":"+testPass+"@", 1)
			} else {
				cfg.Addr = f.URL()
			}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.QueryRange(context.Background(), `{job="caddy"}`, t0, t0.Add(time.Minute), func(Entry) error { return nil }); err != nil {
				t.Fatal(err)
			}
			headers := f.Headers()
			if len(headers) < 2 {
				t.Fatalf("%d requests", len(headers))
			}
			for _, h := range headers {
				if h.Get("Authorization") != tt.wantAuth || h.Get("X-Scope-OrgID") != tt.wantOrgID {
					t.Errorf("Authorization %q X-Scope-OrgID %q, want %q %q", h.Get("Authorization"), h.Get("X-Scope-OrgID"), tt.wantAuth, tt.wantOrgID)
				}
			}
		})
	}
}

func TestTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":"success","data":["host","job"]}`)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"unknown CA refused", Config{}, "certificate"},
		{"CA file", Config{CAFile: caFile}, ""},
		{"insecure skip verify", Config{InsecureSkipVerify: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Addr, cfg.Retries = srv.URL, -1
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			names, err := c.Labels(context.Background(), t0, t0.Add(time.Hour), "")
			switch {
			case tt.wantErr == "" && (err != nil || len(names) != 2):
				t.Errorf("names %v err %v", names, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestCredentialsNeverInErrors(t *testing.T) {
	echo := func(status int) func(w http.ResponseWriter, r *http.Request, n int) bool {
		return func(w http.ResponseWriter, r *http.Request, n int) bool {
			// A hostile or careless proxy echoing the credentials back.
			w.WriteHeader(status)
			fmt.Fprintf(w, "denied for %s", r.Header.Get("Authorization"))
			return true
		}
	}
	tests := []struct {
		name   string
		cfg    func(addr string) Config
		before func(w http.ResponseWriter, r *http.Request, n int) bool
	}{
		{"400 echo, basic", func(a string) Config { return Config{Addr: a, Username: testUser, Password: testPass} }, echo(400)},
		{"503 echo until retries run out", func(a string) Config { return Config{Addr: a, Username: testUser, Password: testPass} }, echo(503)},
		{"401 echo, bearer", func(a string) Config { return Config{Addr: a, BearerToken: testToken} }, echo(401)},
		{"connection refused, password in URL", func(string) Config {
			return Config{Addr: "http://" + testUser + ":" + testPass + "@127.0.0.1:1"}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := lokitest.New(t)
			f.SetBefore(tt.before)
			c, err := New(tt.cfg(f.URL()))
			if err != nil {
				t.Fatal(err)
			}
			c.retry.Sleep = (&sleeper{}).sleep
			res, err := c.QueryRange(context.Background(), `{job="caddy"}`, t0, t0.Add(time.Minute), func(Entry) error { return nil })
			if err == nil {
				t.Fatal("no error")
			}
			secretsIn(t, "error", err.Error())
			secretsIn(t, "error %+v", fmt.Sprintf("%+v", err))
			for _, n := range res.Notes {
				secretsIn(t, "note", n.Message)
			}
			secretsIn(t, "record", fmt.Sprintf("%+v", res.Record("x")))
			_, err = c.Pull(context.Background(), `{job="caddy"}`, "", t0, t0.Add(time.Minute), func(Entry) error { return nil })
			secretsIn(t, "pull error", fmt.Sprint(err))
			_, err = c.MinuteCounts(context.Background(), `{job="caddy"}`, t0, t0.Add(time.Minute))
			secretsIn(t, "minute counts error", fmt.Sprint(err))
		})
	}
}
