package driver

import (
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// errNamedArgument is the error for a sql.Named argument: Presto's
// placeholders are positional, and binding a named argument by its position
// would silently put values in the wrong places.
var errNamedArgument = errors.New("driver: named arguments (sql.Named) are not supported: Presto placeholders are positional; pass the values in the order of the ? placeholders")

// CheckNamedValue implements driver.NamedValueChecker: it refuses named
// arguments, keeps a json.RawMessage as JSON (database/sql's default
// conversion would make it []byte, a VARBINARY), and leaves every other
// value to that conversion.
func (c *Conn) CheckNamedValue(nv *driver.NamedValue) error {
	if nv.Name != "" {
		return fmt.Errorf("%w (argument %d is named %q)", errNamedArgument, nv.Ordinal, nv.Name)
	}
	if raw, ok := nv.Value.(json.RawMessage); ok {
		if raw == nil {
			nv.Value = nil
			return nil
		}
		if !json.Valid(raw) {
			return fmt.Errorf("driver: argument %d: a json.RawMessage that is not valid JSON", nv.Ordinal)
		}
		nv.Value = jsonArg(raw)
		return nil
	}
	return driver.ErrSkip
}

// jsonArg is a json.RawMessage argument, sent as a JSON literal.
type jsonArg string

// interpolate replaces the ? placeholders of query with args rendered as
// SQL literals. A ? inside a string literal ('...', a quote doubled inside), a
// quoted identifier ("...", likewise, or `...`), a line comment (-- to the
// end of the line) or a block comment (/* ... */) is not a placeholder. A
// query without arguments is returned as it is, so that statements such as
// PREPARE s FROM SELECT ? keep their placeholders.
//
// A literal never joins the text around it into another token: a negative
// number is sent as a cast, CAST(-5 AS INTEGER), as 0-? would otherwise
// become 0--5, a comment to the end of the line, and abs ? with (-5) a call
// of abs; and a space separates a literal from
// text it would run into (a?, 1e? and X? with 5, 5 and 'ab' would be a5,
// 1e5 and X'ab' else). See needsSpace.
func interpolate(query string, args []driver.NamedValue) (string, error) {
	if len(args) == 0 {
		return query, nil
	}
	for i := range args {
		if args[i].Name != "" {
			return "", fmt.Errorf("%w (argument %d is named %q)", errNamedArgument, args[i].Ordinal, args[i].Name)
		}
	}
	var b strings.Builder
	b.Grow(len(query) + 16*len(args))
	n := 0
	var err error
	// write appends s, after a space when s would join what precedes it.
	write := func(s string) {
		if s != "" && needsSpace(b.String(), s[0]) {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	scanPlaceholders(query, func(text string, placeholder bool) bool {
		if n > 0 {
			write(text) // after a literal
		} else {
			b.WriteString(text)
		}
		if !placeholder {
			return true
		}
		n++
		if n > len(args) {
			return true // counted below
		}
		var lit string
		if lit, err = sqlLiteral(args[n-1].Value); err != nil {
			err = fmt.Errorf("driver: argument %d: %w", n, err)
			return false
		}
		write(lit)
		return true
	})
	if err != nil {
		return "", err
	}
	if n != len(args) {
		return "", fmt.Errorf("driver: the statement has %d ? placeholder(s) outside literals and comments, and %d argument(s) were given", n, len(args))
	}
	return b.String(), nil
}

// needsSpace reports whether text followed by the byte b, at a literal's
// edge, could be read as one token by Presto's and Trino's lexers
// (SqlBase.g4: identifiers and numbers run on through letters, digits, '_',
// '@', ':', '.' and an exponent, 1E+5; a quote after a quote continues a
// string; X' and U&' start a binary or Unicode string; two operator
// characters can make --, /*, <=, ||, ->...). Bytes of UTF-8 sequences
// count as letters: PrestoDB upper-cases 'ſ' to S.
func needsSpace(text string, b byte) bool {
	if text == "" {
		return false
	}
	switch a := text[len(text)-1]; {
	case isWordByte(a):
		return isWordByte(b) || b == '\''
	case a == '\'' || a == '"' || a == '`':
		return b == a
	case (a == '+' || a == '-') && b >= '0' && b <= '9' && len(text) > 1 && (text[len(text)-2] == 'E' || text[len(text)-2] == 'e'):
		return true // an exponent's sign
	case a == '&':
		return b == '\'' || isOperatorByte(b)
	case isOperatorByte(a):
		return isOperatorByte(b)
	}
	return false
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '@' || c == ':' || c == '.' || c == '$' || c >= utf8.RuneSelf
}

func isOperatorByte(c byte) bool { return strings.IndexByte("-+*/%<>=!|&^~?{}", c) >= 0 }

// scanPlaceholders splits query at its ? placeholders: emit gets each run
// of text before a placeholder with placeholder set, and the text after the
// last one with placeholder unset. It stops when emit returns false. An
// unterminated literal or comment runs to the end of the query (the
// servers' lexers read its opening as a token of its own, and refuse the
// statement).
func scanPlaceholders(query string, emit func(text string, placeholder bool) bool) {
	start := 0
	for i := 0; i < len(query); i++ {
		switch c := query[i]; {
		case c == '\'' || c == '"' || c == '`':
			// A doubled quote inside is the quote itself: skipping to the
			// next quote and carrying on reads it as two literals, which
			// hold no placeholder either way.
			j := strings.IndexByte(query[i+1:], c)
			if j < 0 {
				i = len(query)
			} else {
				i += j + 1
			}
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			// SIMPLE_COMMENT ends at a carriage return or a line feed.
			j := strings.IndexAny(query[i:], "\r\n")
			if j < 0 {
				i = len(query)
			} else {
				i += j
			}
		case c == '/' && i+1 < len(query) && query[i+1] == '*':
			j := strings.Index(query[i+2:], "*/")
			if j < 0 {
				i = len(query)
			} else {
				i += j + 3
			}
		case c == '?':
			if !emit(query[start:i], true) {
				return
			}
			start = i + 1
		}
	}
	emit(query[start:], false)
}

// sqlLiteral renders v, a value database/sql's default conversion produces,
// as a Presto literal. A negative number is a cast to the type its literal
// has (negativeLiteral), so that its minus sign cannot join a minus before
// it and no name before it can make a call of it.
func sqlLiteral(v driver.Value) (string, error) {
	switch v := v.(type) {
	case nil:
		return "NULL", nil
	case int64:
		if v < 0 {
			// 2147483648 and beyond are BIGINT literals, and -x has x's type.
			typ := "INTEGER"
			if v < -math.MaxInt32 {
				typ = "BIGINT"
			}
			return negativeLiteral(strconv.FormatInt(v, 10), typ), nil
		}
		return strconv.FormatInt(v, 10), nil
	case float64:
		switch {
		case math.IsNaN(v):
			return "nan()", nil
		case math.IsInf(v, 1):
			return "infinity()", nil
		case math.IsInf(v, -1):
			return negativeLiteral("-infinity()", "DOUBLE"), nil
		}
		// A DOUBLE literal: with an exponent, never read as a DECIMAL.
		f := strconv.FormatFloat(v, 'E', -1, 64)
		if f[0] == '-' {
			return negativeLiteral(f, "DOUBLE"), nil
		}
		return f, nil
	case bool:
		if v {
			return "TRUE", nil
		}
		return "FALSE", nil
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'", nil
	case []byte:
		if v == nil {
			// A nil slice is SQL NULL, as database/sql's NullString and
			// the drivers of other databases have it; X'' is an empty
			// VARBINARY.
			return "NULL", nil
		}
		return "X'" + hex.EncodeToString(v) + "'", nil
	case time.Time:
		return timestampLiteral(v), nil
	case jsonArg:
		return "JSON '" + strings.ReplaceAll(string(v), "'", "''") + "'", nil
	}
	return "", fmt.Errorf("unsupported type %T", v)
}

// negativeLiteral wraps a negative number in a cast to typ, the type its
// literal has on its own. In parentheses, (-5), a name before it (abs ?, or
// "f" /* */ ?) would make a call of it; a bare -5 would become a subtraction
// there, and 0--5 a comment after a minus. After a name, a cast is a syntax
// error the server reports, as a positive number there is.
func negativeLiteral(number, typ string) string {
	return "CAST(" + number + " AS " + typ + ")"
}

// timestampLiteral renders t as a TIMESTAMP literal with its zone, which
// Presto reads as a timestamp with time zone: the zone's name when it is a
// tz database name (Europe/Paris, UTC), else its offset (+02:00), so that
// the instant is never shifted by the session's zone. The fraction has 3
// digits, or 6 or 9 when the value has finer ones: Presto's timestamp(6)
// and Trino's timestamp(9) keep them, and a millisecond value reads as
// timestamp(3) everywhere.
func timestampLiteral(t time.Time) string {
	zone := t.Location().String()
	if !strings.Contains(zone, "/") && zone != "UTC" || !isZoneName(zone) {
		zone = t.Format("-07:00")
	}
	layout := "2006-01-02 15:04:05.000"
	switch ns := t.Nanosecond(); {
	case ns%1e3 != 0:
		layout = "2006-01-02 15:04:05.000000000"
	case ns%1e6 != 0:
		layout = "2006-01-02 15:04:05.000000"
	}
	return "TIMESTAMP '" + t.Format(layout) + " " + zone + "'"
}

// isZoneName reports whether name can be a tz database name (letters,
// digits and _ + - / only): a time.FixedZone may be named anything, a
// quote included, which would end the literal.
func isZoneName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_+-/", c) >= 0) {
			return false
		}
	}
	return name != ""
}
