package main

import (
	"slices"
	"testing"
)

func TestSplitStatements(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
		rest string
	}{
		{"SELECT 1", nil, "SELECT 1"},
		{"SELECT 1;", []string{"SELECT 1"}, ""},
		{" SELECT 1 ;\n SELECT 2;  SELECT 3 ", []string{"SELECT 1", "SELECT 2"}, "SELECT 3"},
		{"SELECT 'a;b', 'it''s;' ; SELECT 2;", []string{"SELECT 'a;b', 'it''s;'", "SELECT 2"}, ""},
		{`SELECT "x;y" FROM "t""; q"; SELECT 2;`, []string{`SELECT "x;y" FROM "t""; q"`, "SELECT 2"}, ""},
		{"SELECT 1 -- no; split\n, 2; SELECT 3;", []string{"SELECT 1 -- no; split\n, 2", "SELECT 3"}, ""},
		{"SELECT /* a; b */ 1; /* only; a comment */; -- trailing; comment", []string{"SELECT /* a; b */ 1"}, ""},
		{";;  ;\n", nil, ""},
		{"SELECT 'unterminated; still", nil, "SELECT 'unterminated; still"},
		{"SELECT 1; SELECT /* open; comment", []string{"SELECT 1"}, "SELECT /* open; comment"},
		{"SELECT '--'; SELECT '/*'; SELECT 3;", []string{"SELECT '--'", "SELECT '/*'", "SELECT 3"}, ""},
		{"SELECT 1 /**/;", []string{"SELECT 1 /**/"}, ""},
		{"SELECT 1 - -1;", []string{"SELECT 1 - -1"}, ""},
		{"SELECT 2/3; SELECT 4", []string{"SELECT 2/3"}, "SELECT 4"},
	} {
		got, rest := splitStatements(tc.text)
		if !slices.Equal(got, tc.want) || rest != tc.rest {
			t.Errorf("splitStatements(%q) = %q, %q; want %q, %q", tc.text, got, rest, tc.want, tc.rest)
		}
	}
}
