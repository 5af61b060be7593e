package report

import (
	"errors"
	"time"

	"github.com/aftermath-forensics/aftermath/prose"
	"github.com/aftermath-forensics/aftermath/sources"
)

// What the scan command says besides scan.md and its terminal summary: the
// notes it adds to data_quality (said as Texts, so that scan.md says them in
// its language and scan.json keeps the English) and its exit lines.

// texts says the report's messages as Texts, for notes written before the
// reader's language is known.
type textSayer struct{}

func (textSayer) say(name string, data any) prose.Text { return messages.Say(name, data) }

var texts textSayer

// ScanNoLinesNote is the error note of a window without one access-log line:
// not a quiet hour, one the scan cannot judge.
func ScanNoLinesNote(from, to time.Time) sources.QualityNote {
	return sources.Note("access", sources.SeverityError, texts.say("scan.note.no_lines", struct{ From, To string }{
		from.Format(time.RFC3339), to.Format(time.RFC3339)}))
}

// ScanNotAnnouncedNote says that a window the scan could not judge announced
// nothing and kept the state.
func ScanNotAnnouncedNote(s *Scan) sources.QualityNote {
	why := s.NotJudgedText
	if c, _, _ := why.Message(); c == nil {
		why = prose.Plainly(s.NotJudged)
	}
	return sources.Note("notify", sources.SeverityWarning, texts.say("scan.note.not_announced", why))
}

// ScanNotDeliveredNote says that the webhook did not take the message.
func ScanNotDeliveredNote(err error) sources.QualityNote {
	return sources.Note("notify", sources.SeverityError, texts.say("scan.note.not_delivered", err.Error()))
}

// ScanNoLinesError is the exit error of a window without access-log lines
// (note is ScanNoLinesNote's), in lang.
func ScanNoLinesError(lang string, note sources.QualityNote) error {
	p := newPrinter(lang, time.UTC, time.Time{})
	return errors.New(p.say("scan.exit.no_lines", note.Text))
}

// ScanExitLine is the line a scan exits 1 with, in lang: anomalous, not
// judged, part of the window unknown, or (fetchIncomplete) a live source
// that failed; "" when the scan has none of these. path is scan.md's.
func ScanExitLine(lang string, s *Scan, path string, fetchIncomplete bool) string {
	loc, err := time.LoadLocation(s.Window.TZ)
	if err != nil {
		loc = time.UTC
	}
	p := newPrinter(lang, loc, s.Window.To)
	switch {
	case s.Anomalous:
		return p.say("scan.exit.anomalous", path)
	case !s.Judged:
		return p.say("scan.exit.not_judged", struct{ NotJudged, Path string }{p.text(s.NotJudgedText, s.NotJudged), path})
	case len(s.Unknown) > 0:
		return p.say("scan.exit.unknown", path)
	case fetchIncomplete:
		return p.say("scan.exit.fetched", path)
	}
	return ""
}
