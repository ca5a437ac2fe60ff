package main

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// completions is what Do offers after line, as strings.
func completions(c *completer, line string) ([]string, int) {
	got, n := c.Do([]rune(line), len([]rune(line)))
	out := make([]string, len(got))
	for i, r := range got {
		out[i] = string(r)
	}
	return out, n
}

func TestCompleterOffersKeywordsCatalogsSchemasAndTables(t *testing.T) {
	answers := map[string][][]string{
		"SHOW CATALOGS": {{"hive"}, {"tpch"}},
		`SELECT table_schema, table_name FROM "hive".information_schema.tables`: {{"web", "page_views"}, {"web", "users"}, {"default", "t"}},
		`SELECT table_schema, table_name FROM "tpch".information_schema.tables`: {{"tiny", "orders"}, {"tiny", "nation"}},
	}
	var mu sync.Mutex
	var asked []string
	c := &completer{ctx: context.Background(), catalog: "hive", schema: "web", tables: map[string]*nameSet{},
		fetch: func(_ context.Context, query string) ([][]string, error) {
			mu.Lock()
			asked = append(asked, query)
			mu.Unlock()
			return answers[query], nil
		}}
	c.mu.Lock()
	c.loadLocked()
	c.mu.Unlock()
	c.wait()

	for _, tc := range []struct {
		line string
		want []string
		n    int
	}{
		{"SEL", []string{"ECT"}, 3},
		{"sel", []string{"ect"}, 3},
		{"SELECT * FROM tp", []string{"ch"}, 2},
		{"SELECT * FROM page", []string{"_views"}, 4}, // a table of the current schema
		{"SELECT * FROM we", []string{"b"}, 2},        // a schema of the current catalog
		{"SELECT * FROM hive.d", []string{"efault"}, 1},
		{"SELECT * FROM web.u", []string{"sers"}, 1},
		{"SELECT * FROM hive.web.", []string{"page_views", "users"}, 0},
		{"SELECT * FROM nowhere.", nil, 0},
	} {
		if got, n := completions(c, tc.line); !slices.Equal(got, tc.want) || n != tc.n {
			t.Errorf("%q: got %q, %d; want %q, %d", tc.line, got, n, tc.want, tc.n)
		}
	}

	// Another catalog's names are fetched on the first Tab, in the
	// background, and offered from then on.
	if got, _ := completions(c, "SELECT * FROM tpch.tiny.o"); len(got) != 0 {
		t.Errorf("offered %q before tpch's names came", got)
	}
	c.wait()
	if got, _ := completions(c, "SELECT * FROM tpch.tiny.o"); !slices.Equal(got, []string{"rders"}) {
		t.Errorf("tpch.tiny.o: got %q", got)
	}
	// USE fetches the new catalog's names once.
	c.setSession("tpch", "tiny")
	c.wait()
	if got, _ := completions(c, "SELECT * FROM nati"); !slices.Equal(got, []string{"on"}) {
		t.Errorf("after USE tpch.tiny: got %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 3 {
		t.Errorf("%d queries, want each one once: %q", len(asked), asked)
	}
}

// A typed word whose lower case is shorter or longer in bytes than the
// names it matches (the Kelvin sign, 'İ', 'Ⱥ') neither crashes the shell
// nor offers a name cut inside a character: what is offered is the rest of
// the name after the characters typed.
func TestCompleterMatchesCaseFoldedCharactersWhole(t *testing.T) {
	c := &completer{ctx: context.Background(), tables: map[string]*nameSet{},
		catalogs: &nameSet{done: true, rows: [][]string{{"kk"}, {"kelvin"}, {"i"}, {"Ⱥb"}}}}
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"SELECT * FROM \u212a", []string{"elvin", "k"}},
		{"SELECT * FROM İ", nil},
		{"SELECT * FROM ⱥ", []string{"b"}},
	} {
		if got, _ := completions(c, tc.line); !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.line, got, tc.want)
		}
	}
}
