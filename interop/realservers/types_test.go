package realservers

import (
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// Trino's timestamp(p) and time(p) arrive with all their digits, up to
// nanoseconds: the driver announces PARAMETRIC_DATETIME, without which
// Trino rounds them to milliseconds.
func TestTrinoFractionalSecondsWhole(t *testing.T) {
	db := open(t, fleet(t, coordinator.Trino), "?user=alice")
	var ts6, ts9, tm6, tz6 time.Time
	err := db.QueryRowContext(ctx(t), `SELECT
		CAST(TIMESTAMP '2020-01-02 03:04:05.123456' AS timestamp(6)),
		CAST(TIMESTAMP '2020-01-02 03:04:05.123456789' AS timestamp(9)),
		CAST(TIME '01:02:03.123456' AS time(6)),
		CAST(TIMESTAMP '2020-01-02 03:04:05.123456 UTC' AS timestamp(6) with time zone)`).Scan(&ts6, &ts9, &tm6, &tz6)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		got  time.Time
		want int
	}{{"timestamp(6)", ts6, 123456000}, {"timestamp(9)", ts9, 123456789}, {"time(6)", tm6, 123456000}, {"timestamp(6) with time zone", tz6, 123456000}} {
		if c.got.Nanosecond() != c.want {
			t.Errorf("%s: %v has %d ns, want %d", c.name, c.got, c.got.Nanosecond(), c.want)
		}
	}
}
