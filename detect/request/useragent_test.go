package request

import "testing"

func TestUAFamily(t *testing.T) {
	tests := []struct {
		ua, want string
		chromium bool
	}{
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36", "Chrome 121", true},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.0.0 Safari/537.36 Edg/125.0.0.0", "Edge 125", true},
		{"Mozilla/5.0 (Linux; Android 14; SM-S918N) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/125.0.6422.113 Mobile Safari/537.36", "Chrome 125", true},
		{"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", "Firefox 128", false},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1", "Safari 17", false},
		{"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot 2", false},
		{"Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; Googlebot/2.1; +http://www.google.com/bot.html) Chrome/125.0.6422.175 Safari/537.36", "Googlebot 2", false},
		{"curl/7.88.1", "curl 7", false},
		{"", "none", false},
		{"SomethingBot", "other bot", false},
		{"<script>alert(1)</script>", "other", false},
	}
	for _, tt := range tests {
		got := UAFamily(tt.ua)
		if got != tt.want {
			t.Errorf("UAFamily(%q) = %q, want %q", tt.ua, got, tt.want)
		}
		if chromium(got) != tt.chromium {
			t.Errorf("chromium(%q) = %v, want %v", got, !tt.chromium, tt.chromium)
		}
	}
}
