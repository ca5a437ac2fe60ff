package main

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// The bounds of the shell's completion: names are fetched in the
// background, at most maxCompletionNames a query, each query given
// completionTimeout, so that a large or slow catalog never holds the
// prompt up.
const (
	maxCompletionNames = 10000
	completionTimeout  = 10 * time.Second
)

// sqlKeywords are the keywords Tab completes, those of trino-cli's
// completer and the statements of the shell's help.
var sqlKeywords = []string{
	"ALL", "ALTER", "AND", "ANALYZE", "AS", "ASC", "BETWEEN", "BY", "CALL", "CASE", "CAST",
	"CATALOGS", "COLUMNS", "COMMIT", "CREATE", "CROSS", "CURRENT_DATE", "CURRENT_TIMESTAMP",
	"CURRENT_USER", "DEALLOCATE", "DELETE", "DESC", "DESCRIBE", "DISTINCT", "DROP", "ELSE",
	"END", "EXCEPT", "EXECUTE", "EXISTS", "EXPLAIN", "EXTRACT", "FALSE", "FROM", "FULL",
	"FUNCTIONS", "GRANT", "GROUP", "HAVING", "IN", "INNER", "INSERT", "INTERSECT", "INTO", "IS",
	"JOIN", "LEFT", "LIKE", "LIMIT", "MERGE", "NATURAL", "NOT", "NULL", "OFFSET", "ON", "OR",
	"ORDER", "OUTER", "PREPARE", "RESET", "REVOKE", "RIGHT", "ROLLBACK", "SCHEMA", "SCHEMAS",
	"SELECT", "SESSION", "SET", "SHOW", "START", "TABLE", "TABLES", "THEN", "TRANSACTION",
	"TRUE", "UNION", "UPDATE", "USE", "USING", "VALUES", "VIEW", "WHEN", "WHERE", "WITH",
}

// completer is the shell's Tab completion (readline's AutoCompleter):
// keywords, catalogs, and the schemas and tables of each catalog, fetched
// in the background on connections of their own. Do never waits for a
// query: it offers what is known, and starts fetching what is not.
type completer struct {
	ctx   context.Context
	fetch func(ctx context.Context, query string) ([][]string, error)
	wg    sync.WaitGroup

	mu sync.Mutex
	// catalog and schema are the session's, followed after USE.
	catalog, schema string
	catalogs        *nameSet
	// tables holds, by catalog, its tables by schema.
	tables map[string]*nameSet
}

// nameSet is what one background query found: rows of names.
type nameSet struct {
	done bool
	rows [][]string
}

// newCompleter returns a completer whose queries run through db, each
// bounded; they end with ctx. wait waits for them.
func newCompleter(ctx context.Context, db *sql.DB, catalog, schema string) *completer {
	c := &completer{ctx: ctx, catalog: catalog, schema: schema, tables: map[string]*nameSet{},
		fetch: func(ctx context.Context, query string) ([][]string, error) { return queryNames(ctx, db, query) }}
	c.mu.Lock()
	c.loadLocked()
	c.mu.Unlock()
	return c
}

// queryNames runs query and returns its rows as text, at most
// maxCompletionNames of them.
func queryNames(ctx context.Context, db *sql.DB, query string) ([][]string, error) {
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]string
	values := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range values {
		ptrs[i] = &values[i]
	}
	for len(out) < maxCompletionNames && rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]string, len(values))
		for i, v := range values {
			row[i] = v.String
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// setSession follows the session's catalog and schema (USE), and fetches
// the new catalog's names.
func (c *completer) setSession(catalog, schema string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.catalog, c.schema = catalog, schema
	c.loadLocked()
}

// wait waits for the background queries, which end with the context.
func (c *completer) wait() { c.wg.Wait() }

// loadLocked starts fetching the catalogs, and the current catalog's
// tables, unless already fetched or under way.
func (c *completer) loadLocked() {
	if c.catalogs == nil {
		c.catalogs = &nameSet{}
		c.start(c.catalogs, "SHOW CATALOGS")
	}
	c.loadCatalogLocked(c.catalog)
}

// loadCatalogLocked starts fetching catalog's schemas and tables once.
func (c *completer) loadCatalogLocked(catalog string) {
	if catalog == "" || c.tables[catalog] != nil {
		return
	}
	set := &nameSet{}
	c.tables[catalog] = set
	c.start(set, fmt.Sprintf("SELECT table_schema, table_name FROM %s.information_schema.tables", quoteIdent(catalog)))
}

// start runs query in the background into set. A failed query leaves set
// empty: completion is a help, and its errors would only get in the way
// of the shell's output.
func (c *completer) start(set *nameSet, query string) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		rows, _ := c.fetch(c.ctx, query)
		c.mu.Lock()
		set.done, set.rows = true, rows
		c.mu.Unlock()
	}()
}

// quoteIdent quotes an identifier for SQL, as a double-quoted name.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// Do offers the completions of the word before pos: readline's
// AutoCompleter.
func (c *completer) Do(line []rune, pos int) ([][]rune, int) {
	start := pos
	for start > 0 && isNameRune(line[start-1]) {
		start--
	}
	word := string(line[start:pos])
	parts := strings.Split(word, ".")
	prefix := parts[len(parts)-1]
	qualifiers := parts[:len(parts)-1]

	c.mu.Lock()
	var names []string
	switch len(qualifiers) {
	case 0:
		if prefix != "" {
			names = append(names, sqlKeywords...)
		}
		names = append(names, column(c.catalogs, 0, nil)...)
		names = append(names, column(c.tables[c.catalog], 0, nil)...)
		names = append(names, column(c.tables[c.catalog], 1, func(r []string) bool { return r[0] == c.schema })...)
	case 1:
		q := qualifiers[0]
		// catalog.schema, or schema.table in the current catalog.
		if slices.Contains(column(c.catalogs, 0, nil), q) {
			c.loadCatalogLocked(q)
			names = append(names, column(c.tables[q], 0, nil)...)
		}
		names = append(names, column(c.tables[c.catalog], 1, func(r []string) bool { return r[0] == q })...)
	case 2:
		c.loadCatalogLocked(qualifiers[0])
		names = column(c.tables[qualifiers[0]], 1, func(r []string) bool { return r[0] == qualifiers[1] })
	}
	c.mu.Unlock()

	seen := map[string]bool{}
	var out [][]rune
	for _, name := range names {
		rest, ok := cutFoldPrefix(name, prefix)
		if !ok || name == prefix {
			continue
		}
		if prefix != "" && isLower(prefix) {
			// Keywords in the case they are typed in.
			rest = strings.ToLower(rest)
		}
		if !seen[rest] {
			seen[rest] = true
			out = append(out, []rune(rest))
		}
	}
	slices.SortFunc(out, func(a, b []rune) int { return strings.Compare(string(a), string(b)) })
	return out, len([]rune(prefix))
}

// column returns column i of set's rows that keep says to (all when nil),
// once each.
func column(set *nameSet, i int, keep func([]string) bool) []string {
	if set == nil {
		return nil
	}
	var out []string
	for _, r := range set.rows {
		if i < len(r) && r[i] != "" && (keep == nil || keep(r)) {
			out = append(out, r[i])
		}
	}
	return out
}

func isNameRune(r rune) bool {
	return r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// cutFoldPrefix returns what follows prefix in s, and whether s begins
// with prefix, compared character by character under Unicode case folding.
// Lower-casing both would not do: it changes some characters' lengths (the
// Kelvin sign's lower case is 'k'), and the rest must be cut where the
// characters typed end in s.
func cutFoldPrefix(s, prefix string) (string, bool) {
	for _, p := range prefix {
		r, size := utf8.DecodeRuneInString(s)
		if size == 0 || !strings.EqualFold(string(r), string(p)) {
			return "", false
		}
		s = s[size:]
	}
	return s, true
}

func isLower(s string) bool { return strings.ToLower(s) == s }
