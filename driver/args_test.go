package driver

import (
	"database/sql/driver"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func positional(values ...any) []driver.NamedValue {
	out := make([]driver.NamedValue, len(values))
	for i, v := range values {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

func TestInterpolateSkipsLiteralsAndComments(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no tz database:", err)
	}
	for _, tc := range []struct {
		query string
		args  []driver.NamedValue
		want  string
	}{
		{"SELECT '?' , ?", positional(int64(1)), "SELECT '?' , 1"},
		{"SELECT 'it''s ?', ?", positional("x"), "SELECT 'it''s ?', 'x'"},
		{`SELECT "a?b", ?`, positional(true), `SELECT "a?b", TRUE`},
		{`SELECT "a""?", ?`, positional(false), `SELECT "a""?", FALSE`},
		{"SELECT ? -- why?\n, ?", positional(int64(1), int64(2)), "SELECT 1 -- why?\n, 2"},
		{"SELECT /* ? */ ?", positional(nil), "SELECT /* ? */ NULL"},
		{"SELECT ?, ?", positional("o'k", []byte{0xca, 0xfe}), "SELECT 'o''k', X'cafe'"},
		{"SELECT ?", positional(1.5), "SELECT 1.5E+00"},
		{"SELECT ?", positional(math.NaN()), "SELECT nan()"},
		{"SELECT ?", positional(time.Date(2024, 5, 6, 7, 8, 9, 123e6, paris)),
			"SELECT TIMESTAMP '2024-05-06 07:08:09.123 Europe/Paris'"},
		{"SELECT ?", positional(time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("", 2*3600))),
			"SELECT TIMESTAMP '2024-05-06 07:08:09.000 +02:00'"},
		{"SELECT ?", positional(time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)),
			"SELECT TIMESTAMP '2024-05-06 07:08:09.000 UTC'"},
		{"PREPARE s FROM SELECT ?", nil, "PREPARE s FROM SELECT ?"},
		{"SELECT 'unterminated ?", positional(), "SELECT 'unterminated ?"},
		// A literal never joins the text around it (FuzzInterpolateKeepsTokens).
		{"SELECT x FROM t WHERE x > 0-? AND tenant = 'a'", positional(int64(-5)), "SELECT x FROM t WHERE x > 0-CAST(-5 AS INTEGER) AND tenant = 'a'"},
		{"SELECT ?-?", positional(-1.5, math.Inf(-1)), "SELECT CAST(-1.5E+00 AS DOUBLE)-CAST(-infinity() AS DOUBLE)"},
		// After a name, parentheses would make a call: abs(-5).
		{"SELECT abs ?, \"f\"/* */?, abs?", positional(int64(-5), int64(-2147483648), -2.0), "SELECT abs CAST(-5 AS INTEGER), \"f\"/* */CAST(-2147483648 AS BIGINT), abs CAST(-2E+00 AS DOUBLE)"},
		{"SELECT a?, 1e?, ??, X?, ?'s', 0E+?", positional(int64(1), int64(2), int64(3), int64(4), "ab", "'", int64(5)), "SELECT a 1, 1e 2, 3 4, X 'ab', '''' 's', 0E+ 5"},
		{"SELECT ? -- ?\r, ?", positional(int64(1), int64(2)), "SELECT 1 -- ?\r, 2"},
		{"SELECT `?`, ?", positional(int64(1)), "SELECT `?`, 1"},
		{"SELECT ?", positional(time.Date(2024, 5, 6, 7, 8, 9, 0, time.FixedZone("x/'y", 3600))),
			"SELECT TIMESTAMP '2024-05-06 07:08:09.000 +01:00'"},
	} {
		got, err := interpolate(tc.query, tc.args)
		if err != nil || got != tc.want {
			t.Errorf("interpolate(%q) = %q, %v; want %q", tc.query, got, err, tc.want)
		}
	}
}

func TestInterpolateRefusesMismatchAndNames(t *testing.T) {
	for _, tc := range []struct {
		query string
		args  []driver.NamedValue
		want  string
	}{
		{"SELECT '?'", positional(int64(1)), "1 argument(s)"},
		{"SELECT ?, ? -- ?", positional(int64(1)), "2 ? placeholder(s)"},
		{"SELECT ?", positional(struct{}{}), "argument 1: unsupported type"},
		{"SELECT ?", []driver.NamedValue{{Name: "a", Ordinal: 1, Value: int64(1)}}, `named "a"`},
	} {
		_, err := interpolate(tc.query, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("interpolate(%q): %v, want an error with %q", tc.query, err, tc.want)
		}
	}
	c := &Conn{}
	if err := c.CheckNamedValue(&driver.NamedValue{Name: "b", Ordinal: 1}); !errors.Is(err, errNamedArgument) {
		t.Errorf("CheckNamedValue(named): %v", err)
	}
	if err := c.CheckNamedValue(&driver.NamedValue{Ordinal: 1}); err != driver.ErrSkip {
		t.Errorf("CheckNamedValue(positional): %v, want driver.ErrSkip", err)
	}
}

func FuzzScanPlaceholders(f *testing.F) {
	for _, s := range []string{"SELECT '?' , ?", "/* ? */ ? -- ?\n?", `"?"?''?`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		var b strings.Builder
		n := 0
		scanPlaceholders(q, func(text string, placeholder bool) bool {
			b.WriteString(text)
			if placeholder {
				b.WriteByte('?')
				n++
			}
			return true
		})
		if b.String() != q || n > strings.Count(q, "?") {
			t.Fatalf("scan of %q rebuilt %q with %d placeholders", q, b.String(), n)
		}
	})
}

// A time.Time argument keeps its microseconds and nanoseconds; a
// millisecond value is written as before.
func TestTimestampArgumentKeepsItsPrecision(t *testing.T) {
	for _, tc := range []struct {
		ns   int
		want string
	}{
		{123e6, "TIMESTAMP '2024-05-06 07:08:09.123 UTC'"},
		{123456e3, "TIMESTAMP '2024-05-06 07:08:09.123456 UTC'"},
		{123456789, "TIMESTAMP '2024-05-06 07:08:09.123456789 UTC'"},
		{1, "TIMESTAMP '2024-05-06 07:08:09.000000001 UTC'"},
	} {
		got, err := interpolate("?", positional(time.Date(2024, 5, 6, 7, 8, 9, tc.ns, time.UTC)))
		if err != nil || got != tc.want {
			t.Errorf("%d ns: %q, %v; want %q", tc.ns, got, err, tc.want)
		}
	}
}
