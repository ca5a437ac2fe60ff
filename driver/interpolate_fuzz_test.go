package driver

import (
	"database/sql/driver"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// sqlToken is one token of a statement as Presto's and Trino's lexers read
// it, comments and white space left out.
type sqlToken struct {
	kind string // ident, number, string, binary, ustring, quoted, placeholder, unterminated, op
	text string
}

// sqlTokens splits q into tokens after Trino's lexer rules
// (core/trino-grammar/src/main/antlr4/io/trino/grammar/sql/SqlBase.g4 in
// trinodb/trino; PrestoDB's presto-parser SqlBase.g4 has the same rules,
// and also lets '@' and ':' into identifiers):
//
//	STRING: '\'' ( ~'\'' | '\'\'' )* '\''
//	UNICODE_STRING: 'U&\'' ( ~'\'' | '\'\'' )* '\''
//	BINARY_LITERAL: 'X\'' (~'\'')* '\''
//	IDENTIFIER: (LETTER | '_') (LETTER | DIGIT | '_')*
//	DIGIT_IDENTIFIER: DIGIT (LETTER | DIGIT | '_')+
//	QUOTED_IDENTIFIER: '"' ( ~'"' | '""' )* '"'
//	BACKQUOTED_IDENTIFIER: '`' ( ~'`' | '``' )* '`'
//	INTEGER_VALUE, DECIMAL_VALUE, DOUBLE_VALUE: digits, '_', '.', 'E' [+-]? DIGIT+
//	SIMPLE_COMMENT: '--' ~[\r\n]* '\r'? '\n'?
//	BRACKETED_COMMENT: '/*' .*? '*/'
//	WS: [ \r\n\t]+
//
// It is coarser than the lexer where that only makes it stricter: a number
// or identifier runs on through every letter, digit, '_', '@', ':', '.'
// and exponent sign (1.x is one token here, two there), and a non-ASCII
// character is a letter (PrestoDB upper-cases 'ſ' to S). An unterminated
// literal or comment is one token to the end, where the lexers read its
// opening as a token of its own and the parser refuses the statement.
func sqlTokens(q string) []sqlToken {
	var toks []sqlToken
	add := func(kind, text string) { toks = append(toks, sqlToken{kind, text}) }
	// quoted returns the end of the literal whose quote is at q[i], with
	// the quote doubled inside when doubled is set, or -1.
	quoted := func(i int, quote byte, doubled bool) int {
		for j := i + 1; j < len(q); j++ {
			if q[j] == quote {
				if doubled && j+1 < len(q) && q[j+1] == quote {
					j++
					continue
				}
				return j + 1
			}
		}
		return -1
	}
	literal := func(kind string, i, quoteAt int, quote byte, doubled bool) int {
		end := quoted(quoteAt, quote, doubled)
		if end < 0 {
			add("unterminated", q[i:])
			return len(q)
		}
		add(kind, q[i:end])
		return end
	}
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case strings.HasPrefix(q[i:], "--"):
			j := strings.IndexAny(q[i:], "\r\n")
			if j < 0 {
				return toks
			}
			i += j
		case strings.HasPrefix(q[i:], "/*"):
			j := strings.Index(q[i+2:], "*/")
			if j < 0 {
				add("unterminated", q[i:])
				return toks
			}
			i += j + 4
		case c == '\'':
			i = literal("string", i, i, '\'', true)
		case c == '"':
			i = literal("quoted", i, i, '"', true)
		case c == '`':
			i = literal("quoted", i, i, '`', true)
		case (c == 'X' || c == 'x') && i+1 < len(q) && q[i+1] == '\'':
			i = literal("binary", i, i+1, '\'', false)
		case (c == 'U' || c == 'u') && strings.HasPrefix(q[i+1:], "&'"):
			i = literal("ustring", i, i+2, '\'', true)
		case c == '?':
			add("placeholder", "?")
			i++
		case isTokenWordByte(c) && (c != '.' || i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9'):
			j := i
			for j < len(q) {
				if isTokenWordByte(q[j]) {
					j++
					continue
				}
				// An exponent's sign: 1E+5, 1.5e-3.
				if (q[j] == '+' || q[j] == '-') && j > i && (q[j-1] == 'E' || q[j-1] == 'e') &&
					q[i] >= '0' && q[i] <= '9' && j+1 < len(q) && q[j+1] >= '0' && q[j+1] <= '9' {
					j++
					continue
				}
				break
			}
			kind := "ident"
			if c >= '0' && c <= '9' || c == '.' {
				kind = "number"
			}
			add(kind, q[i:j])
			i = j
		default:
			n := 1
			for _, op := range []string{"<>", "!=", "<=", ">=", "||", "->", "=>"} {
				if strings.HasPrefix(q[i:], op) {
					n = 2
				}
			}
			if c >= utf8.RuneSelf {
				_, n = utf8.DecodeRuneInString(q[i:])
			}
			add("op", q[i:i+n])
			i += n
		}
	}
	return toks
}

func isTokenWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '@' || c == ':' || c == '.' || c >= utf8.RuneSelf
}

// literalTokens checks that toks begins with the tokens of one literal
// holding v, and returns how many tokens it takes.
func literalTokens(toks []sqlToken, v driver.Value) (int, error) {
	texts := func(n int) string {
		if n > len(toks) {
			n = len(toks)
		}
		var s []string
		for _, t := range toks[:n] {
			s = append(s, t.text)
		}
		return strings.Join(s, " ")
	}
	// negative is a negative number's tokens, a cast to the type its
	// literal has: CAST ( - number AS type ), the number's tokens n long.
	negative := func(typ string, n int, want func([]sqlToken) bool) (int, error) {
		k := 3 + n + 3
		if len(toks) >= k && strings.EqualFold(toks[0].text, "CAST") && toks[1].text == "(" && toks[2].text == "-" &&
			want(toks[3:3+n]) && strings.EqualFold(toks[3+n].text, "AS") && strings.EqualFold(toks[4+n].text, typ) && toks[5+n].text == ")" {
			return k, nil
		}
		return 0, fmt.Errorf("%v: got tokens %q, want CAST ( - number AS %s )", v, texts(k), typ)
	}
	one := func(kind, text string) (int, error) {
		if len(toks) >= 1 && toks[0].kind == kind && strings.EqualFold(toks[0].text, text) {
			return 1, nil
		}
		return 0, fmt.Errorf("%v: got tokens %q, want the %s %s", v, texts(1), kind, text)
	}
	switch v := v.(type) {
	case nil:
		return one("ident", "NULL")
	case bool:
		return one("ident", strings.ToUpper(strconv.FormatBool(v)))
	case int64:
		if v < 0 {
			typ := "INTEGER"
			if v < -math.MaxInt32 {
				typ = "BIGINT"
			}
			return negative(typ, 1, func(t []sqlToken) bool { return t[0].kind == "number" && "-"+t[0].text == strconv.FormatInt(v, 10) })
		}
		return one("number", strconv.FormatInt(v, 10))
	case float64:
		number := func(t []sqlToken) bool {
			f, err := strconv.ParseFloat(t[0].text, 64)
			return t[0].kind == "number" && err == nil && f == math.Abs(v)
		}
		call := func(name string) func([]sqlToken) bool {
			return func(t []sqlToken) bool { return t[0].text == name && t[1].text == "(" && t[2].text == ")" }
		}
		switch {
		case len(toks) >= 3 && (math.IsNaN(v) && call("nan")(toks) || math.IsInf(v, 1) && call("infinity")(toks)):
			return 3, nil
		case math.IsInf(v, -1):
			return negative("DOUBLE", 3, call("infinity"))
		case math.Signbit(v):
			return negative("DOUBLE", 1, number)
		case len(toks) >= 1 && number(toks):
			return 1, nil
		}
		return 0, fmt.Errorf("%v: got tokens %q", v, texts(1))
	case string:
		if len(toks) >= 1 && toks[0].kind == "string" && stringTokenValue(toks[0].text) == v {
			return 1, nil
		}
		return 0, fmt.Errorf("%q: got tokens %q, want one string", v, texts(1))
	case []byte:
		if v == nil {
			return one("ident", "NULL")
		}
		return one("binary", "X'"+hex.EncodeToString(v)+"'")
	case time.Time:
		if len(toks) >= 2 && strings.EqualFold(toks[0].text, "TIMESTAMP") && toks[1].kind == "string" &&
			strings.HasPrefix(stringTokenValue(toks[1].text), v.Format("2006-01-02 15:04:05")) {
			return 2, nil
		}
		return 0, fmt.Errorf("%v: got tokens %q, want TIMESTAMP and one string", v, texts(2))
	}
	return 0, fmt.Errorf("no literal of %T", v)
}

// stringTokenValue is the value of a string token.
func stringTokenValue(s string) string {
	return strings.ReplaceAll(s[1:len(s)-1], "''", "'")
}

// checkInterpolation checks the promise of interpolate: the statement's
// tokens outside its placeholders are unchanged, and each placeholder
// becomes the tokens of one literal holding its argument.
func checkInterpolation(t *testing.T, query string, args []driver.NamedValue) {
	t.Helper()
	got, err := interpolate(query, args)
	if err != nil {
		return // refused: nothing is sent
	}
	in, out := sqlTokens(query), sqlTokens(got)
	n := 0
	for _, tok := range in {
		if len(out) == 0 {
			t.Fatalf("interpolate(%q) = %q: it ends before the statement's token %q", query, got, tok.text)
		}
		if tok.kind != "placeholder" {
			if out[0] != tok {
				t.Fatalf("interpolate(%q) = %q: the statement's token %q became %q", query, got, tok.text, out[0].text)
			}
			out = out[1:]
			continue
		}
		if n >= len(args) {
			t.Fatalf("interpolate(%q) = %q: the statement has more placeholders than the %d arguments", query, got, len(args))
		}
		k, err := literalTokens(out, args[n].Value)
		if err != nil {
			t.Fatalf("interpolate(%q) = %q: argument %d: %v", query, got, n+1, err)
		}
		// A literal opening with ( after a name would be that name's
		// arguments: abs ? with (-5) is a call.
		if out[0].text == "(" {
			t.Fatalf("interpolate(%q) = %q: argument %d opens with (, which a name before it makes a call", query, got, n+1)
		}
		out = out[k:]
		n++
	}
	if len(out) > 0 || n != len(args) {
		t.Fatalf("interpolate(%q) = %q: %d tokens left over, %d of %d arguments placed", query, got, len(out), n, len(args))
	}
}

// FuzzInterpolateKeepsTokens: for any statement and any arguments, the
// statement's tokens outside the placeholders are unchanged and each
// placeholder becomes the tokens of one literal value. kinds picks each
// placeholder's argument among the others, in turn.
func FuzzInterpolateKeepsTokens(f *testing.F) {
	type seed struct {
		query string
		kinds string
		n     int64
		x     float64
		s     string
		b     []byte
		zone  string
	}
	for _, s := range []seed{
		// A negative number after a minus made 0--5, a comment that
		// dropped the tenant condition.
		{"SELECT * FROM t WHERE x > 0-? AND tenant = 'a'", "n", -5, 0, "", nil, ""},
		{"SELECT 1-?-?", "nx", -1, -2.5, "", nil, ""},
		{"SELECT 1 -?", "x", 0, math.Inf(-1), "", nil, ""},
		// In parentheses, a negative number after a name was its call.
		{"SELECT abs ?, \"f\"?", "mx", 5, -1, "", nil, ""},
		{"SELECT a?, 1e?, 1.?, ?.5, ??", "nnnnnn", 5, 0, "", nil, ""},
		{"SELECT X?, U&?, '?'?, ?'x', x'?'", "ssss", 0, 0, "ab", nil, ""},
		{"SELECT ?/* ? */?--?\r?", "sbsn", 7, 0, "it's", []byte{0xca, 0xfe}, ""},
		{"SELECT `?`, \"a\"\"?\", ?", "t", 0, 0, "", nil, "Europe/Paris"},
		{"SELECT ?", "t", 0, 0, "", nil, "x/'; DROP TABLE t --"},
		{"SELECT ſ?, ?ı, ?E5", "nxn", 3, 1e300, "", nil, ""},
		{"SELECT ?, ?, ?, ?", "0tfb", 0, 0, "", nil, ""},
		{"SELECT ? /* ?", "n", 1, 0, "", nil, ""},
		{"0E+?", "n", 50, 0, "", nil, ""},
	} {
		f.Add(s.query, s.kinds, s.n, s.x, s.s, s.b, s.zone)
	}
	f.Fuzz(func(t *testing.T, query, kinds string, n int64, x float64, s string, b []byte, zone string) {
		if kinds == "" {
			kinds = "n"
		}
		count := 0
		scanPlaceholders(query, func(_ string, placeholder bool) bool {
			if placeholder {
				count++
			}
			return true
		})
		// n, x, s, b, t (a time in the zone named zone), f (a bool), 0
		// (nil), m (-n); any other byte picks by its value.
		values := []driver.Value{n, x, s, b, time.Unix(n%(1<<35), 0).In(time.FixedZone(zone, int(n%50000))), n%2 == 0, nil, -n}
		var args []driver.NamedValue
		for i := range count {
			k := kinds[i%len(kinds)]
			j := strings.IndexByte("nxsbtf0m", k)
			if j < 0 {
				j = int(k) % len(values)
			}
			args = append(args, driver.NamedValue{Ordinal: i + 1, Value: values[j]})
		}
		checkInterpolation(t, query, args)
	})
}
