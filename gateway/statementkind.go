package gateway

import (
	"net/url"
	"strings"
	"unicode"
)

// Statement kinds, Trino's query types (the queryType of its resource
// group selectors), as the selectors' statementKind names them.
const (
	KindSelect            = "SELECT"
	KindExplain           = "EXPLAIN"
	KindDescribe          = "DESCRIBE"
	KindInsert            = "INSERT"
	KindUpdate            = "UPDATE"
	KindDelete            = "DELETE"
	KindMerge             = "MERGE"
	KindAnalyze           = "ANALYZE"
	KindDataDefinition    = "DATA_DEFINITION"
	KindAlterTableExecute = "ALTER_TABLE_EXECUTE"
)

// statementKinds are the names a selector's statementKind takes; DDL is
// DATA_DEFINITION's short name.
var statementKinds = map[string]string{
	KindSelect: KindSelect, KindExplain: KindExplain, KindDescribe: KindDescribe,
	KindInsert: KindInsert, KindUpdate: KindUpdate, KindDelete: KindDelete, KindMerge: KindMerge,
	KindAnalyze: KindAnalyze, KindDataDefinition: KindDataDefinition, "DDL": KindDataDefinition,
	KindAlterTableExecute: KindAlterTableExecute,
}

// sqlToken is one token of a statement: a word (an unquoted identifier or
// keyword, upper-cased in up), a quoted identifier, a string literal, or
// one character of punctuation.
type sqlToken struct {
	text   string // as written, unquoted; lower-cased for identifiers
	up     string // upper-cased, for keywords; empty for quoted text
	punct  byte
	quoted bool // a "quoted" identifier
	str    bool // a 'string' literal
}

// lexSQL splits a statement into tokens, dropping comments. It is a
// tokenizer, not a parser: it never fails, and what it cannot read
// becomes punctuation.
func lexSQL(sql string) []sqlToken {
	var out []sqlToken
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case strings.HasPrefix(sql[i:], "--"):
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				return out
			}
			i += end + 1
		case strings.HasPrefix(sql[i:], "/*"):
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += end + 4
		case c == '\'' || c == '"':
			text, n := quotedText(sql[i:], c)
			if c == '"' {
				out = append(out, sqlToken{text: strings.ToLower(text), quoted: true})
			} else {
				out = append(out, sqlToken{text: text, str: true})
			}
			i += n
		default:
			n := wordLen(sql[i:])
			if n == 0 {
				out = append(out, sqlToken{text: sql[i : i+1], punct: c})
				i++
				continue
			}
			w := sql[i : i+n]
			out = append(out, sqlToken{text: strings.ToLower(w), up: strings.ToUpper(w)})
			i += n
		}
	}
	return out
}

// quotedText reads the text quoted by q at the start of s (q doubled
// inside stands for itself) and returns it with the bytes it took.
func quotedText(s string, q byte) (string, int) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != q {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == q {
			b.WriteByte(q)
			i++
			continue
		}
		return b.String(), i + 1
	}
	return b.String(), len(s) // unterminated: the coordinator will say so
}

// wordLen is the length of the word (letters, digits, _, @, $) at the
// start of s.
func wordLen(s string) int {
	for i, r := range s {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '@' || r == '$') {
			return i
		}
	}
	return len(s)
}

// statementFacts are what the selectors read of a statement's text.
type statementFacts struct {
	Kind   string     // one of the Kind names; empty when unknown
	Tables []tableRef // the tables it names, qualified by the session
}

// tableRef is a table a statement names: catalog and schema from the
// session's when the statement leaves them out.
type tableRef struct{ Catalog, Schema, Table string }

func (t tableRef) String() string { return t.Catalog + "." + t.Schema + "." + t.Table }

// readStatement reads the kind of sql and the tables it names;
// catalog and schema are the session's, prepared its prepared statements
// (X-*-Prepared-Statement), for EXECUTE.
func readStatement(sql, catalog, schema, prepared string) statementFacts {
	return readTokens(lexSQL(sql), strings.ToLower(catalog), strings.ToLower(schema), prepared, 0)
}

func readTokens(toks []sqlToken, catalog, schema, prepared string, depth int) statementFacts {
	i := 0
	for i < len(toks) && toks[i].punct == '(' {
		i++
	}
	word := func(j int) string {
		if j < len(toks) {
			return toks[j].up
		}
		return ""
	}
	var kind string
	switch first := word(i); first {
	case "SELECT", "WITH", "VALUES", "TABLE":
		kind = KindSelect
		if first == "WITH" && mainVerb(toks[i:]) == "INSERT" {
			kind = KindInsert
		}
	case "SHOW", "DESCRIBE", "DESC":
		kind = KindDescribe
	case "EXPLAIN":
		kind = KindExplain
	case "INSERT", "UPDATE", "DELETE", "MERGE", "ANALYZE":
		kind = first
	case "TRUNCATE":
		kind = KindDelete
	case "REFRESH":
		kind = KindInsert
	case "CREATE":
		kind = KindDataDefinition
		if word(i+1) == "TABLE" || (word(i+1) == "OR" && word(i+3) == "TABLE") {
			for _, t := range toks[i:] {
				if t.up == "AS" {
					kind = KindInsert // CREATE TABLE ... AS: it writes rows
					break
				}
			}
		}
	case "ALTER":
		kind = KindDataDefinition
		for _, t := range toks[i:] {
			if t.up == "EXECUTE" {
				kind = KindAlterTableExecute
				break
			}
		}
	case "DROP", "COMMENT", "GRANT", "REVOKE", "DENY", "SET", "RESET", "USE", "CALL", "PREPARE",
		"DEALLOCATE", "START", "COMMIT", "ROLLBACK":
		kind = KindDataDefinition
	case "EXECUTE":
		if depth > 0 {
			break
		}
		// The kind of what it runs: a prepared statement the session
		// carries, or the text EXECUTE IMMEDIATE gives.
		if word(i+1) == "IMMEDIATE" && i+2 < len(toks) && toks[i+2].str {
			return readTokens(lexSQL(toks[i+2].text), catalog, schema, "", depth+1)
		}
		if i+1 < len(toks) && toks[i+1].up != "" {
			if text, ok := preparedStatement(prepared, toks[i+1].text); ok {
				return readTokens(lexSQL(text), catalog, schema, "", depth+1)
			}
		}
	}
	if kind == KindDescribe && word(i) == "SHOW" && word(i+1) != "COLUMNS" && word(i+1) != "CREATE" && word(i+1) != "STATS" {
		return statementFacts{Kind: kind} // SHOW TABLES FROM s names a schema, not a table
	}
	return statementFacts{Kind: kind, Tables: tablesNamed(toks, catalog, schema)}
}

// mainVerb is the first word at parenthesis depth 0 after a WITH's
// queries: SELECT, or INSERT for Trino's WITH ... INSERT.
func mainVerb(toks []sqlToken) string {
	depth := 0
	for _, t := range toks {
		switch {
		case t.punct == '(':
			depth++
		case t.punct == ')':
			depth--
		case depth == 0 && (t.up == "SELECT" || t.up == "INSERT" || t.up == "VALUES" || t.up == "TABLE"):
			return t.up
		}
	}
	return ""
}

// preparedStatement finds name among the prepared statements of an
// X-*-Prepared-Statement header (name=url-encoded text, comma-separated).
func preparedStatement(header, name string) (string, bool) {
	for _, kv := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), name) {
			continue
		}
		text, err := url.QueryUnescape(v)
		return text, err == nil
	}
	return "", false
}

// tableKeywords are the words a table name follows.
var tableKeywords = map[string]bool{"FROM": true, "JOIN": true, "INTO": true, "TABLE": true, "UPDATE": true,
	"USING": true, "DESCRIBE": true, "DESC": true, "VIEW": true, "ANALYZE": true}

// notAlias are the words that end a table reference rather than alias it.
var notAlias = map[string]bool{"WHERE": true, "JOIN": true, "LEFT": true, "RIGHT": true, "FULL": true, "INNER": true,
	"CROSS": true, "NATURAL": true, "ON": true, "USING": true, "GROUP": true, "ORDER": true, "HAVING": true,
	"LIMIT": true, "OFFSET": true, "FETCH": true, "UNION": true, "INTERSECT": true, "EXCEPT": true, "WINDOW": true,
	"SET": true, "VALUES": true, "SELECT": true, "WITH": true, "AS": true, "TABLESAMPLE": true, "FOR": true,
	"WHEN": true, "LATERAL": true, "CROSS_JOIN": true, "MATCH_RECOGNIZE": true}

// tablesNamed are the tables toks name: the names after FROM, JOIN,
// INTO, TABLE, UPDATE, USING, VIEW, ANALYZE and DESCRIBE (and after the
// commas of a FROM list), but not a function's name (one followed by "("), a
// FROM inside EXTRACT, SUBSTRING, TRIM or OVERLAY or after IS DISTINCT,
// nor a WITH query's own name.
func tablesNamed(toks []sqlToken, catalog, schema string) []tableRef {
	ctes := map[string]bool{}
	depth := 0
names:
	for i, t := range toks {
		switch {
		case t.punct == '(':
			depth++
		case t.punct == ')':
			depth--
		case depth == 0 && t.up == "SELECT":
			// WITH name AS (...), name AS (...) SELECT: the queries'
			// names come before the main query. A nested WITH's names
			// are not looked for: they are taken for tables.
			break names
		case depth == 0 && i+2 < len(toks) && (t.up == "WITH" || t.up == "RECURSIVE" || t.punct == ',') && isName(toks[i+1]) && toks[i+2].up == "AS":
			ctes[toks[i+1].text] = true
		}
	}
	var out []tableRef
	var funcs []bool // per open parenthesis: a function's whose FROM is no table's
	inFunc := func() bool { return len(funcs) > 0 && funcs[len(funcs)-1] }
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.punct == '(':
			prev := ""
			if i > 0 {
				prev = toks[i-1].up
			}
			funcs = append(funcs, prev == "EXTRACT" || prev == "SUBSTRING" || prev == "TRIM" || prev == "OVERLAY" || prev == "POSITION")
			continue
		case t.punct == ')':
			if len(funcs) > 0 {
				funcs = funcs[:len(funcs)-1]
			}
			continue
		case !tableKeywords[t.up] || inFunc() || (t.up == "FROM" && i > 0 && toks[i-1].up == "DISTINCT"):
			continue
		}
		list := t.up == "FROM"
		// A name with "(" after it is a function's (FROM TABLE(...),
		// UNNEST), except for the columns after INTO t and CREATE TABLE t.
		columns := t.up == "INTO" || (t.up == "TABLE" && i > 0 && (toks[i-1].up == "CREATE" || toks[i-1].up == "REPLACE"))
		for j := i + 1; ; {
			parts, n := qualifiedName(toks[j:])
			if n == 0 || (!columns && j+n < len(toks) && toks[j+n].punct == '(') {
				break
			}
			if len(parts) == 1 && ctes[parts[0]] {
				parts = nil
			}
			if ref, ok := qualify(parts, catalog, schema); ok {
				out = append(out, ref)
			}
			j += n
			if !list {
				break
			}
			if j < len(toks) && toks[j].up == "AS" {
				j++
			}
			if j < len(toks) && isName(toks[j]) && !notAlias[toks[j].up] {
				j++
			}
			if j >= len(toks) || toks[j].punct != ',' {
				break
			}
			j++
			i = j - 1
		}
	}
	return out
}

// isName reports whether t may be an identifier.
func isName(t sqlToken) bool { return t.quoted || (t.up != "" && !unicode.IsDigit(rune(t.up[0]))) }

// qualifiedName reads name(.name){0,2} at the start of toks and returns its
// parts with the tokens it took; n is 0 when toks start with no name.
func qualifiedName(toks []sqlToken) (parts []string, n int) {
	for n < len(toks) && isName(toks[n]) && len(parts) < 3 {
		if !toks[n].quoted && len(parts) == 0 && (notAlias[toks[n].up] || tableKeywords[toks[n].up] || toks[n].up == "IF" || toks[n].up == "EXISTS" || toks[n].up == "NOT") {
			// IF NOT EXISTS t, FROM SELECT: skip what no name is.
			if toks[n].up == "IF" || toks[n].up == "NOT" || toks[n].up == "EXISTS" {
				n++
				continue
			}
			return nil, 0
		}
		parts = append(parts, toks[n].text)
		n++
		if n < len(toks) && toks[n].punct == '.' {
			n++
			continue
		}
		break
	}
	if len(parts) == 0 {
		return nil, 0
	}
	return parts, n
}

// qualify fills in the session's catalog and schema.
func qualify(parts []string, catalog, schema string) (tableRef, bool) {
	switch len(parts) {
	case 1:
		return tableRef{catalog, schema, parts[0]}, true
	case 2:
		return tableRef{catalog, parts[0], parts[1]}, true
	case 3:
		return tableRef{parts[0], parts[1], parts[2]}, true
	}
	return tableRef{}, false
}
