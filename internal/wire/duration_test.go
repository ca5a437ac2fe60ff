package wire

import (
	"testing"
	"time"
)

// Durations as io.airlift.units.Duration.toString writes them.
func TestAirliftDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{235 * time.Second, "3.92m"},
		{0, "0.00ns"},
		{500 * time.Nanosecond, "500.00ns"},
		{1500 * time.Microsecond, "1.50ms"},
		{59 * time.Second, "59.00s"},
		{90 * time.Minute, "1.50h"},
		{36 * time.Hour, "1.50d"},
		{400 * 24 * time.Hour, "400.00d"},
		{-time.Second, "0.00ns"},
	} {
		if got := AirliftDuration(c.d); got != c.want {
			t.Errorf("AirliftDuration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
