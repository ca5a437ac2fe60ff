package driver_test

import (
	"database/sql"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// Presto returns timestamp with time zone values in the session's zone,
// named by its ID; presto-go-client v2.1.1 cannot parse those and fails
// the whole result. The driver hands them back as time.Time in their zone,
// gzip or not, Presto or Trino, and with offsets and UTC too.
func TestTimestampWithTimeZoneInANamedZone(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no zone database:", err)
	}
	for _, tc := range []struct {
		name    string
		opts    coordinator.Options
		scheme  string
		zone    string
		loc     *time.Location
		wantLoc string
	}{
		{"gzip", coordinator.Options{}, "presto", "Europe/Paris", paris, "Europe/Paris"},
		{"plain", coordinator.Options{NoGzip: true}, "presto", "Europe/Paris", paris, "Europe/Paris"},
		{"trino", coordinator.Options{Flavour: coordinator.Trino}, "trino", "Europe/Paris", paris, "Europe/Paris"},
		{"offset", coordinator.Options{}, "presto", "+02:00", time.FixedZone("+02:00", 2*3600), "+02:00"},
		{"utc", coordinator.Options{NoGzip: true}, "presto", "UTC", time.UTC, "UTC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := coordinator.Start(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			db := openPerStatement(t, tc.scheme+"://"+c.Addr()+"/hive/default?user=alice")
			rows, err := db.Query("SELECT * FROM tstz('" + tc.zone + "')")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			types, err := rows.ColumnTypes()
			if err != nil {
				t.Fatal(err)
			}
			if got := types[1].DatabaseTypeName(); got != "TIMESTAMP WITH TIME ZONE" {
				t.Errorf("DatabaseTypeName %q", got)
			}
			if got := types[1].ScanType(); got != reflect.TypeFor[sql.NullTime]() {
				t.Errorf("ScanType %v", got)
			}
			var got []sql.NullTime
			for rows.Next() {
				var n int64
				var ts sql.NullTime
				if err := rows.Scan(&n, &ts); err != nil {
					t.Fatal(err)
				}
				got = append(got, ts)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			want := []time.Time{
				time.Date(2024, 5, 6, 7, 8, 9, 123e6, tc.loc),
				time.Date(2024, 12, 31, 23, 59, 59, 999e6, tc.loc),
			}
			if len(got) != 3 || got[2].Valid {
				t.Fatalf("rows %v, want two values and a NULL", got)
			}
			for i, w := range want {
				if !got[i].Valid || !got[i].Time.Equal(w) || got[i].Time.Location().String() != tc.wantLoc {
					t.Errorf("row %d: %v, want %v in %s", i+1, got[i].Time, w, tc.wantLoc)
				}
			}
		})
	}
}

// A zone the zone database does not know fails the result, with the value
// named in the error.
func TestTimestampWithTimeZoneInAnUnknownZone(t *testing.T) {
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	db := openPerStatement(t, "presto://"+c.Addr()+"/hive/default?user=alice")
	var n int64
	var ts time.Time
	err = db.QueryRow("SELECT * FROM tstz('Nowhere/Atlantis')").Scan(&n, &ts)
	if err == nil || !strings.Contains(err.Error(), `"2024-05-06 07:08:09.123 Nowhere/Atlantis"`) {
		t.Fatalf("got %v, want the value named", err)
	}
}
