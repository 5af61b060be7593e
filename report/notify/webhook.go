package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aftermath-forensics/aftermath/detect/scan"
	"github.com/aftermath-forensics/aftermath/sources/httpretry"
	"github.com/aftermath-forensics/aftermath/sources/redact"
)

// Message is a Slack-compatible incoming-webhook payload.
type Message struct {
	Text string `json:"text"`
}

// maxSummary bounds one anomaly's summary in a message: the report has it all.
const maxSummary = 280

// Compose writes one message for a scan's events: a headline with the window,
// one line per event, and where the report is (a URL becomes a link, a path is
// quoted). Text from logs is escaped for Slack (&, <, >), so a user agent
// cannot ping a channel or forge a link.
func Compose(events []Event, window scan.Range, loc *time.Location, report string) Message {
	if loc == nil {
		loc = time.UTC
	}
	counts := map[EventType]int{}
	for _, e := range events {
		counts[e.Type]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "aftermath scan %s-%s %s: %d new, %d worse, %d ended",
		window.From.In(loc).Format("2006-01-02 15:04"), window.To.In(loc).Format("15:04"), window.To.In(loc).Format("MST"),
		counts[Opened], counts[Worsened], counts[Closed])
	for _, e := range events {
		a := e.Anomaly
		b.WriteString("\n")
		switch e.Type {
		case Opened:
			fmt.Fprintf(&b, "NEW %s %s", a.Severity, slack(a.ID()))
		case Worsened:
			fmt.Fprintf(&b, "WORSE %s %s", severityChange(e.Previous.Severity, a.Severity), slack(a.ID()))
		case Closed:
			fmt.Fprintf(&b, "ENDED %s (open since %s)", slack(a.ID()), a.Start.In(loc).Format("Jan 2 15:04"))
			continue
		}
		fmt.Fprintf(&b, " since %s: %s %s", a.Start.In(loc).Format("15:04"), slack(a.Metric), value(a.Observed))
		var notes []string
		if !a.NoBaseline {
			notes = append(notes, "usually "+value(a.Baseline))
		}
		if e.Type == Worsened {
			notes = append(notes, "announced at "+value(e.Previous.Observed))
		}
		if len(notes) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(notes, "; "))
		}
		fmt.Fprintf(&b, ". %s", slack(truncate(a.Summary, maxSummary)))
	}
	switch {
	case strings.HasPrefix(report, "https://") || strings.HasPrefix(report, "http://"):
		fmt.Fprintf(&b, "\nReport: <%s|scan report>", strings.NewReplacer("|", "%7C", ">", "%3E", "<", "%3C").Replace(report))
	case report != "":
		fmt.Fprintf(&b, "\nReport: %s", slack(report))
	}
	return Message{Text: b.String()}
}

func severityChange(from, to scan.Severity) string {
	if from == to {
		return string(to)
	}
	return string(from) + "->" + string(to)
}

// slack escapes the three characters Slack's mrkdwn gives meaning to.
func slack(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

func value(v float64) string {
	if v == float64(int64(v)) || v >= 100 || v <= -100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// Webhook delivers messages to an incoming-webhook URL.
type Webhook struct {
	// URL is the webhook's address. Its path usually is the secret (Slack's
	// /services/T.../B.../...): errors and Target never show it.
	URL string
	// Client sends the requests; nil means http.Client's defaults.
	Client *http.Client
	// Timeout bounds each attempt (default 10 s) unless Client sets its own.
	Timeout time.Duration
	// Attempts is how many times to try (default 4).
	Attempts int
	// Backoff caps the wait after the first failure, doubled after each
	// further one up to MaxBackoff (defaults 2 s and 30 s); each wait is
	// drawn below its cap (full jitter). A Retry-After header (429, 503),
	// seconds or HTTP date, is honoured instead.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Budget bounds the time all attempts and waits take (default 2 min: a
	// scheduled scan should not hang on its notification); a Retry-After
	// beyond it ends the retries.
	Budget time.Duration
}

// Target is the webhook's scheme and host, for reports and errors.
func (w *Webhook) Target() string {
	u, err := url.Parse(w.URL)
	if err != nil || u.Host == "" {
		return "(unparsable webhook URL)"
	}
	return u.Scheme + "://" + u.Host
}

// Send posts msg and returns how many attempts it made. It retries network
// errors, timeouts, 429 and 5xx under httpretry's policy; it gives up at once
// on other 4xx (a revoked or mistyped webhook) and when ctx ends.
func (w *Webhook) Send(ctx context.Context, msg Message) (int, error) {
	body, err := json.Marshal(msg)
	if err != nil {
		return 0, fmt.Errorf("notify: encode message: %w", err)
	}
	if _, err := url.ParseRequestURI(w.URL); err != nil {
		return 0, fmt.Errorf("notify: webhook %s: not a URL", w.Target())
	}
	policy := httpretry.Policy{Attempts: w.Attempts, Base: w.Backoff, Max: w.MaxBackoff, Budget: w.Budget}
	if policy.Attempts <= 0 {
		policy.Attempts = 4
	}
	if policy.Base <= 0 {
		policy.Base = 2 * time.Second
	}
	if policy.Max <= 0 {
		policy.Max = 30 * time.Second
	}
	if policy.Budget <= 0 {
		policy.Budget = 2 * time.Minute
	}
	client := &http.Client{}
	if w.Client != nil {
		*client = *w.Client
	}
	if client.Timeout <= 0 {
		client.Timeout = w.Timeout
		if client.Timeout <= 0 {
			client.Timeout = 10 * time.Second
		}
	}
	n, err := policy.Do(ctx, func(ctx context.Context) error { return w.post(ctx, client, body) })
	if err != nil {
		return n, w.scrub(fmt.Errorf("notify: webhook %s: attempt %d of %d: %w", w.Target(), n, policy.Attempts, err))
	}
	return n, nil
}

// post makes one attempt. A failure worth retrying (a network error, 429,
// 5xx) is marked so, with the server's Retry-After.
func (w *Webhook) post(ctx context.Context, client *http.Client, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "aftermath-scan")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // *url.Error prints the URL, secret path included
		}
		return httpretry.Retryable(err, 0)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	return httpretry.Response(resp, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(text))))
}

// scrub keeps the webhook's path and query out of an error, wherever a
// transport or a server echoed them.
func (w *Webhook) scrub(err error) error {
	u, perr := url.Parse(w.URL)
	if perr != nil {
		return redact.Error(err, []string{w.URL})
	}
	secrets := []string{w.URL}
	if u.Path != "" && u.Path != "/" {
		secrets = append(secrets, u.Path, url.PathEscape(u.Path))
	}
	if u.RawQuery != "" {
		secrets = append(secrets, u.RawQuery)
	}
	return redact.Error(err, secrets)
}
