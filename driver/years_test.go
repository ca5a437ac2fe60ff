package driver_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Dates and timestamps before year 1 and after 9999, which both servers
// write with java.time's signed year ("-0001-01-01", "+10000-01-01":
// PrestoDB's SqlTimestamp JSON_FORMAT "uuuu-MM-dd HH:mm:ss.SSS", Trino's
// LocalDate), are read; a day that does not exist in its year is not.
func TestDatesOutsideYears1To9999(t *testing.T) {
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal("the zone database is needed:", err)
	}
	s := newPageServer(t, false)
	db := s.db(t, "trino")
	for i, tc := range []struct {
		typ, raw string
		want     time.Time
	}{
		{"date", `"-0001-01-01"`, time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"date", `"+10000-01-01"`, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"date", `"-2024-05-06"`, time.Date(-2024, 5, 6, 0, 0, 0, 0, time.UTC)},
		{"date", `"0000-12-31"`, time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC)},
		{"date", `"+10000-02-29"`, time.Date(10000, 2, 29, 0, 0, 0, 0, time.UTC)},
		{"timestamp(3)", `"+10000-06-01 01:02:03.456"`, time.Date(10000, 6, 1, 1, 2, 3, 456e6, time.UTC)},
		{"timestamp", `"-0001-01-01 00:00:00.000"`, time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"timestamp(3) with time zone", `"-0249-10-16 01:26:48.000 Asia/Kolkata"`, time.Date(-249, 10, 16, 1, 26, 48, 0, kolkata)},
		{"timestamp(6) with time zone", `"+10000-01-01 00:00:00.123456 +05:30"`, time.Date(10000, 1, 1, 0, 0, 0, 123456e3, time.FixedZone("+05:30", 5*3600+1800))},
	} {
		statement := fmt.Sprintf("SELECT year%d", i)
		s.set(statement, []string{tc.typ}, "["+tc.raw+"]")
		var got time.Time
		if err := db.QueryRow(statement).Scan(&got); err != nil {
			t.Errorf("%s %s: %v", tc.typ, tc.raw, err)
			continue
		}
		if !got.Equal(tc.want) || got.Location().String() != tc.want.Location().String() {
			t.Errorf("%s %s: got %v, want %v", tc.typ, tc.raw, got, tc.want)
		}
	}
	s.set("SELECT noday", []string{"date"}, `["+10001-02-29"]`)
	var d time.Time
	err = db.QueryRow("SELECT noday").Scan(&d)
	if err == nil || !strings.Contains(err.Error(), `column "c0" (date)`) {
		t.Fatalf("February 29th of 10001: got %v, %v", d, err)
	}
}
