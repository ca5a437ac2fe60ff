package driver

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Both servers write dates and timestamps with java.time's "uuuu" year
// (PrestoDB's SqlDate and SqlTimestamp, JSON_FORMAT "uuuu-MM-dd
// HH:mm:ss.SSS"; Trino's SqlDate and SqlTimestamp through LocalDate):
// four digits from year 0 to 9999, and a sign with at least four digits
// outside them: "-0001-01-01" (2 BC), "+10000-01-01". Go's layouts read
// neither, and time.Time holds both.

// parseDateTime parses s by layout, which begins with the year ("2006"),
// in loc; the year may carry a sign or more than four digits.
func parseDateTime(layout, s string, loc *time.Location) (time.Time, error) {
	if !strings.HasPrefix(layout, "2006") {
		return time.ParseInLocation(layout, s, loc) // a time of day
	}
	digits := 0
	for digits < len(s) && s[digits] >= '0' && s[digits] <= '9' {
		digits++
	}
	if digits == 4 {
		return time.ParseInLocation(layout, s, loc)
	}
	return parseWideYear(layout, s, loc)
}

// parseWideYear parses a value whose year is signed or longer than four
// digits: the rest is parsed in the leap year 2000, so that February 29th
// is read, and then put in its year, where it must exist.
func parseWideYear(layout, s string, loc *time.Location) (time.Time, error) {
	i, sign := 0, 1
	if s != "" && (s[0] == '+' || s[0] == '-') {
		if s[0] == '-' {
			sign = -1
		}
		i = 1
	}
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j-i < 4 {
		return time.Time{}, fmt.Errorf("%q: the year has fewer than four digits", s)
	}
	year, err := strconv.Atoi(s[i:j])
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: year: %w", s, err)
	}
	rest, err := time.ParseInLocation(layout, "2000"+s[j:], time.UTC)
	if err != nil {
		return time.Time{}, err
	}
	t := time.Date(sign*year, rest.Month(), rest.Day(), rest.Hour(), rest.Minute(), rest.Second(), rest.Nanosecond(), loc)
	if t.Month() != rest.Month() || t.Day() != rest.Day() {
		return time.Time{}, fmt.Errorf("%q: no such day in year %d", s, sign*year)
	}
	return t, nil
}
