package driver_test

import (
	"testing"
)

// PrestoDB names its time types without a precision: their values have
// milliseconds (SqlTimestamp "uuuu-MM-dd HH:mm:ss.SSS"), so DecimalSize
// says 3, as for Trino's timestamp(3).
func TestUnparameterisedTimesHaveMilliseconds(t *testing.T) {
	s := newPageServer(t, false)
	types := []string{"timestamp", "timestamp with time zone", "time", "time with time zone", "timestamp(3)"}
	s.set("SELECT times", types, `["2024-05-06 07:08:09.123","2024-05-06 07:08:09.123 UTC","07:08:09.123","07:08:09.123 +02:00","2024-05-06 07:08:09.123"]`)
	rows, err := s.db(t, "presto").Query("SELECT times")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ct, err := rows.ColumnTypes()
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range ct {
		if p, s, ok := c.DecimalSize(); p != 3 || s != 0 || !ok {
			t.Errorf("%s: DecimalSize %d, %d, %v; want 3, 0, true", types[i], p, s, ok)
		}
	}
}
