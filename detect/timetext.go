package detect

import (
	"fmt"
	"math"
	"time"

	"github.com/aftermath-forensics/aftermath/prose"
)

// changeWhen says when a change was made relative to the onset's day:
// "23:48 the day before", "07:07", "14:02 on 30 Sep, 3 days before"; the
// full date and time when there is no onset.
func changeWhen(t, onset time.Time, loc *time.Location) prose.Text {
	lt := t.In(loc)
	when := struct {
		T              time.Time
		Days           int64
		NoOnset        bool
		Full, DayMonth string
	}{T: lt, NoOnset: onset.IsZero(), Full: lt.Format("2006-01-02 15:04"), DayMonth: lt.Format("2 Jan")}
	if !when.NoOnset {
		when.Days = civilDay(onset.In(loc)) - civilDay(lt)
	}
	return Messages.Say("config_change.when", when)
}

func civilDay(t time.Time) int64 {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// humanDuration: "3 h 12 min", "40 min", "2 days".
func spanText(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%d days", int(d.Hours()/24))
	case d >= time.Hour:
		h := int(d.Hours())
		m := int(d.Minutes()) - 60*h
		if m == 0 {
			return fmt.Sprintf("%d h", h)
		}
		return fmt.Sprintf("%d h %d min", h, m)
	}
	return fmt.Sprintf("%d min", int(math.Round(d.Minutes())))
}
