package main

import (
	"strings"
	"testing"
)

// printAll runs p over cols and rows as printRows would.
func printAll(t *testing.T, format string, cols []string, rows ...[]any) string {
	t.Helper()
	var b strings.Builder
	p, err := newPrinter(format, &b)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.header(cols); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := p.row(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.finish(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestPrestoCLIOutputFormats(t *testing.T) {
	cols := []string{"n", "name", "note"}
	rows := [][]any{
		{int64(1), "alice", nil},
		{int64(1234), "bob", "say \"hi\"\tthen\nleave"},
	}
	for _, tc := range []struct {
		format, want string
	}{
		{"ALIGNED", "" +
			"  n   | name  |     note      \n" +
			"------+-------+---------------\n" +
			"    1 | alice | NULL          \n" +
			" 1234 | bob   | say \"hi\"\tthen+\n" +
			"      |       | leave         \n" +
			"(2 rows)\n"},
		{"VERTICAL", "" +
			"-[ RECORD 1 ]\n" +
			"n    | 1\n" +
			"name | alice\n" +
			"note | NULL\n" +
			"-[ RECORD 2 ]-------\n" +
			"n    | 1234\n" +
			"name | bob\n" +
			"note | say \"hi\"\tthen\n" +
			"     | leave\n"},
		{"CSV", "" +
			`"1","alice",""` + "\n" +
			`"1234","bob","say ""hi""` + "\tthen\nleave\"\n"},
		{"CSV_HEADER", "" +
			`"n","name","note"` + "\n" +
			`"1","alice",""` + "\n" +
			`"1234","bob","say ""hi""` + "\tthen\nleave\"\n"},
		{"TSV", "1\talice\t\n1234\tbob\tsay \"hi\"\\tthen\\nleave\n"},
		{"tsv_header", "n\tname\tnote\n1\talice\t\n1234\tbob\tsay \"hi\"\\tthen\\nleave\n"},
		{"JSON", `{"n":1,"name":"alice","note":null}` + "\n" + `{"n":1234,"name":"bob","note":"say \"hi\"\tthen\nleave"}` + "\n"},
		{"NULL", ""},
	} {
		if got := printAll(t, tc.format, cols, rows...); got != tc.want {
			t.Errorf("%s printed\n%s\nwant\n%s", tc.format, got, tc.want)
		}
	}
	// Empty results, and one row.
	if got := printAll(t, "ALIGNED", []string{"n"}); got != " n \n---\n(0 rows)\n" {
		t.Errorf("ALIGNED without rows: %q", got)
	}
	if got := printAll(t, "ALIGNED", []string{"n"}, []any{int64(7)}); got != " n \n---\n 7 \n(1 row)\n" {
		t.Errorf("ALIGNED with a row: %q", got)
	}
	if got := printAll(t, "VERTICAL", []string{"n"}); got != "(no rows)\n" {
		t.Errorf("VERTICAL without rows: %q", got)
	}
	if got := printAll(t, "TSV", []string{"b"}, []any{"back\\slash\r"}); got != "back\\\\slash\\r\n" {
		t.Errorf("TSV escapes: %q", got)
	}
	if _, err := newPrinter("XML", &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "ALIGNED, VERTICAL") {
		t.Errorf("an unknown format: %v", err)
	}
}
