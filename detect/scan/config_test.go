package scan

import (
	"strings"
	"testing"
	"time"
)

func TestSlots(t *testing.T) {
	seoul, err := time.LoadLocation("Asia/Seoul")
	if err != nil {
		t.Fatal(err)
	}
	newYork, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		cfg      Config
		now      time.Time
		wantN    int
		wantLast time.Time // the last (oldest) slot's end
		clock    string    // every slot ends at this local clock time
	}{
		{"a week of days", Config{Loc: seoul}, time.Date(2026, 10, 22, 3, 0, 0, 0, seoul), 7,
			time.Date(2026, 10, 15, 3, 0, 0, 0, seoul), "03:00"},
		{"four weeks: the same weekday", Config{Baseline: 28 * day, Loc: seoul}, time.Date(2026, 10, 22, 3, 0, 0, 0, seoul), 4,
			time.Date(2026, 9, 24, 3, 0, 0, 0, seoul), "03:00"},
		// New York leaves daylight saving time on 1 November 2026: the slots
		// keep the clock hour, so one of them is 25 hours from the next.
		{"across a DST change", Config{Baseline: 3 * day, Loc: newYork}, time.Date(2026, 11, 2, 9, 0, 0, 0, newYork), 3,
			time.Date(2026, 10, 30, 9, 0, 0, 0, newYork), "09:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg.Defaults()
			slots := cfg.Slots(tt.now)
			if len(slots) != tt.wantN {
				t.Fatalf("%d slots, want %d: %v", len(slots), tt.wantN, slots)
			}
			if !slots[len(slots)-1].To.Equal(tt.wantLast) {
				t.Errorf("oldest slot ends %s, want %s", slots[len(slots)-1].To.In(cfg.Loc), tt.wantLast)
			}
			for _, s := range slots {
				if got := s.To.In(cfg.Loc).Format("15:04"); got != tt.clock || s.To.Sub(s.From) != cfg.Since {
					t.Errorf("slot %s ends at %s local, want %s, %s long", s, got, tt.clock, cfg.Since)
				}
				if tt.cfg.Baseline >= 14*day && s.To.In(cfg.Loc).Weekday() != tt.now.Weekday() {
					t.Errorf("slot %s is not on a %s", s, tt.now.Weekday())
				}
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Since: 25 * time.Hour}, "at most 24h"},
		{Config{Since: 90 * time.Second}, "whole minutes"},
		{Config{Baseline: 12 * time.Hour}, "at least one day"},
		{Config{Lookback: 30 * time.Minute}, "lookback"},
	}
	for _, tt := range tests {
		err := tt.cfg.Defaults().Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want an error about %q", tt.cfg, err, tt.want)
		}
	}
	if err := (Config{}).Defaults().Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}
