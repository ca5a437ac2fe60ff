package driver

import (
	"errors"
	"testing"
	"time"
)

func TestLocalZoneName(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.FixedZone("", 5*3600+1800))
	noLink := func(string) (string, error) { return "", errors.New("not a link") }
	link := func(target string) func(string) (string, error) {
		return func(p string) (string, error) {
			if p != localtimePath {
				t.Errorf("readlink(%q), want %q", p, localtimePath)
			}
			return target, nil
		}
	}
	env := func(tz string, set bool) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if k != "TZ" {
				t.Errorf("lookupEnv(%q), want TZ", k)
			}
			return tz, set
		}
	}
	for _, c := range []struct {
		name     string
		env      func(string) (string, bool)
		readlink func(string) (string, error)
		want     string
	}{
		{"TZ wins over the link", env("Europe/Paris", true), link("/usr/share/zoneinfo/Asia/Tokyo"), "Europe/Paris"},
		{"TZ with the colon of POSIX", env(":America/New_York", true), noLink, "America/New_York"},
		{"an empty TZ is UTC", env("", true), link("/usr/share/zoneinfo/Asia/Tokyo"), "UTC"},
		{"an unknown TZ falls to the link", env("Mars/Olympus", true), link("/usr/share/zoneinfo/Asia/Tokyo"), "Asia/Tokyo"},
		{"the link", env("", false), link("/usr/share/zoneinfo/Etc/UTC"), "Etc/UTC"},
		{"a relative link", env("", false), link("../usr/share/zoneinfo/Europe/Berlin"), "Europe/Berlin"},
		{"a posix/ link", env("", false), link("/usr/share/zoneinfo/posix/Australia/Sydney"), "Australia/Sydney"},
		{"Local is no zone's name", env("Local", true), noLink, "+05:30"},
		{"a link outside zoneinfo", env("", false), link("/etc/zones/mine"), "+05:30"},
		{"no link: the offset", env("", false), noLink, "+05:30"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := localZoneName(c.env, c.readlink, now); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
