package bundle

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/aftermath-forensics/aftermath/sources"
)

// MinuteStatusFile holds, for the minutes of a pushed-down fetch whose raw
// lines were not pulled, what Loki counted per status: enough for the impact,
// the per-minute series and PHP's time to cover the whole window although only
// the minutes that stand out were read line by line. It is CSV, not JSON:
// access/*.json is read as an access log.
const MinuteStatusFile = AccessDir + "/minute-status.csv"

// MinuteStatus is one row of MinuteStatusFile: the requests of one minute
// with one status, origin and lateness.
type MinuteStatus struct {
	// Minute is the minute's start (UTC); the minute is [Minute, Minute+1m) of log time.
	Minute time.Time
	Status int
	// Origin is OriginUpstream (PHP answered), OriginProxy (a 5xx or 429 Caddy
	// made) or OriginStatic (anything else Caddy served without PHP), as the
	// access-log reader decides it.
	Origin sources.Origin
	// Late: the duration was above the clients' timeout (site.client_timeout_s).
	Late bool
	// Requests is how many lines Loki counted.
	Requests int64
	// PHPSeconds sums the durations of those lines when Origin is upstream.
	PHPSeconds float64
}

var minuteStatusHeader = []string{"minute", "status", "origin", "late", "requests", "php_seconds"}

// WriteMinuteStatus writes rows as CSV.
func WriteMinuteStatus(w io.Writer, rows []MinuteStatus) error {
	return WriteCSV(w, minuteStatusHeader, func(write func([]string) error) error {
		for _, r := range rows {
			late := "0"
			if r.Late {
				late = "1"
			}
			if err := write([]string{r.Minute.UTC().Format(time.RFC3339), strconv.Itoa(r.Status), r.Origin.String(), late,
				strconv.FormatInt(r.Requests, 10), strconv.FormatFloat(r.PHPSeconds, 'f', -1, 64)}); err != nil {
				return err
			}
		}
		return nil
	})
}

// ReadMinuteStatus reads a MinuteStatusFile. Errors name the file and line.
func ReadMinuteStatus(path string) ([]MinuteStatus, error) {
	var out []MinuteStatus
	err := ReadCSV(path, minuteStatusHeader, func(_ int, rec []string) error {
		bad := func(field string, err error) error { return fmt.Errorf("%s: %v", field, err) }
		var m MinuteStatus
		var err error
		if m.Minute, err = time.Parse(time.RFC3339, rec[0]); err != nil {
			return bad("minute", err)
		}
		if m.Minute.Truncate(time.Minute) != m.Minute {
			return bad("minute", fmt.Errorf("%s is not the start of a minute", rec[0]))
		}
		if m.Status, err = strconv.Atoi(rec[1]); err != nil || m.Status < 100 || m.Status > 999 {
			return bad("status", fmt.Errorf("%q is not an HTTP status", rec[1]))
		}
		switch rec[2] {
		case sources.OriginUpstream.String():
			m.Origin = sources.OriginUpstream
		case sources.OriginProxy.String():
			m.Origin = sources.OriginProxy
		case sources.OriginStatic.String():
			m.Origin = sources.OriginStatic
		default:
			return bad("origin", fmt.Errorf("%q is none of upstream, proxy, static", rec[2]))
		}
		switch rec[3] {
		case "0":
		case "1":
			m.Late = true
		default:
			return bad("late", fmt.Errorf("%q is neither 0 nor 1", rec[3]))
		}
		if m.Requests, err = strconv.ParseInt(rec[4], 10, 64); err != nil || m.Requests < 0 {
			return bad("requests", fmt.Errorf("%q is not a count", rec[4]))
		}
		if m.PHPSeconds, err = strconv.ParseFloat(rec[5], 64); err != nil || !(m.PHPSeconds >= 0) || math.IsInf(m.PHPSeconds, 1) {
			return bad("php_seconds", fmt.Errorf("%q is not a number of seconds", rec[5]))
		}
		out = append(out, m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
