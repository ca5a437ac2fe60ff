package driver

import (
	"os"
	"strings"
	"time"
)

// localtimePath is the link a Unix system names its zone by.
const localtimePath = "/etc/localtime"

// clientTimeZone is the zone a statement's session has when the DSN names
// none: the client's own, as JDBC and trino-go-client send. Without one
// each coordinator uses its JVM's zone, so current_timestamp and every
// cast to a zone would depend on the coordinator the strategy picked.
func clientTimeZone() string {
	return localZoneName(os.LookupEnv, os.Readlink, time.Now())
}

// localZoneName finds the IANA name of the local zone: $TZ, else the
// target of /etc/localtime; when neither names a zone Go knows, the
// current offset (+05:30), which both servers accept.
func localZoneName(lookupEnv func(string) (string, bool), readlink func(string) (string, error), now time.Time) string {
	if tz, ok := lookupEnv("TZ"); ok {
		name := strings.TrimPrefix(tz, ":")
		if name == "" {
			return "UTC" // an empty TZ means UTC to the C library and to Go
		}
		if knownZone(name) {
			return name
		}
	}
	if target, err := readlink(localtimePath); err == nil {
		if i := strings.LastIndex(target, "zoneinfo/"); i >= 0 {
			name := target[i+len("zoneinfo/"):]
			name = strings.TrimPrefix(strings.TrimPrefix(name, "posix/"), "right/")
			if knownZone(name) {
				return name
			}
		}
	}
	return now.Format("-07:00")
}

// knownZone reports whether name is a zone of the IANA database ("Local",
// which time.LoadLocation also accepts, names none).
func knownZone(name string) bool {
	if name == "Local" || strings.HasPrefix(name, "/") {
		return false
	}
	_, err := time.LoadLocation(name)
	return err == nil
}
