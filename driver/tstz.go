package driver

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// presto-go-client v2.1.1 parses "timestamp with time zone" values only
// with a numeric offset or an abbreviation, so a value in a named zone
// ("2024-05-06 07:08:09.123 Europe/Paris", what Presto returns for a
// session in that zone) would fail the whole result. The driver decodes
// rows itself (values.go) and parses such values here.

// zones caches loaded locations: LoadLocation reads the zone database.
var zones sync.Map // name → *time.Location

// parseTSTZ parses a Presto timestamp with time zone value: a date, a
// time with an optional fraction, and a zone ID (Europe/Paris), UTC or a
// numeric offset (+02:00).
func parseTSTZ(s string) (time.Time, error) {
	i := strings.LastIndexByte(s, ' ')
	if i < 0 {
		return time.Time{}, fmt.Errorf("timestamp with time zone %q: no zone", s)
	}
	loc, err := zoneOf(s[i+1:])
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp with time zone %q: %w", s, err)
	}
	t, err := parseDateTime("2006-01-02 15:04:05", s[:i], loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp with time zone %q: %w", s, err)
	}
	return t, nil
}

func zoneOf(z string) (*time.Location, error) {
	if l, ok := zones.Load(z); ok {
		return l.(*time.Location), nil
	}
	var loc *time.Location
	switch {
	case z == "UTC" || z == "Z":
		loc = time.UTC
	case strings.HasPrefix(z, "+") || strings.HasPrefix(z, "-"):
		h, m, ok := strings.Cut(z[1:], ":")
		hh, err1 := strconv.Atoi(h)
		mm, err2 := strconv.Atoi(m)
		if !ok || err1 != nil || err2 != nil || hh > 14 || mm > 59 {
			return nil, fmt.Errorf("bad offset %q", z)
		}
		secs := hh*3600 + mm*60
		if z[0] == '-' {
			secs = -secs
		}
		loc = time.FixedZone(z, secs)
	default:
		var err error
		if loc, err = time.LoadLocation(z); err != nil {
			return nil, err
		}
	}
	zones.Store(z, loc)
	return loc, nil
}
