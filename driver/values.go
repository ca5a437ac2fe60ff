package driver

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	presto "github.com/prestodb/presto-go-client/v2"
)

// The driver decodes result rows itself rather than through
// presto-go-client v2.1.1's rows, which unmarshal every row into []any
// (numbers become float64: a BIGINT above 2^53 is silently rounded, and
// 2^63-1 wraps to -2^63), fail the whole result on a DOUBLE NaN or
// Infinity (written as strings), quote the values of JSON, UUID and other
// string-valued types once more, cannot parse a TIME WITH TIME ZONE or a
// TIMESTAMP WITH TIME ZONE in a named zone, and report thin column
// metadata. The client still does the protocol (requests, headers, session
// and transaction state, pages); the driver reads each row's JSON as the
// coordinator wrote it. docs/types.md lists every type.

// column is one result column as the driver reads it.
type column struct {
	name     string
	typ      string // the type as the coordinator names it: decimal(10,2)
	base     string // its lower-case name without parameters: decimal
	length   int64  // varchar(n), char(n): n; else -1
	prec     int64  // decimal(p,s), time(p)...: p; else -1
	scale    int64  // decimal(p,s): s; else -1
	scanType reflect.Type
	// container is an array's, map's or row's type, nil for other types.
	container *containerType
}

// newColumns reads the result's column list.
func newColumns(cols []presto.Column) []column {
	out := make([]column, len(cols))
	for i, c := range cols {
		out[i] = parseColumn(c.Name, c.Type)
	}
	return out
}

// parseColumn reads a column's type: its base name and parameters.
func parseColumn(name, typ string) column {
	c := column{name: name, typ: typ, length: -1, prec: -1, scale: -1}
	t := strings.ToLower(strings.TrimSpace(typ))
	base, params := t, ""
	if i := strings.IndexByte(t, '('); i >= 0 {
		base = strings.TrimSpace(t[:i])
		if j := matchingParen(t, i); j > i {
			params = t[i+1 : j]
			// timestamp(3) with time zone: the rest of the name follows.
			if rest := strings.TrimSpace(t[j+1:]); rest != "" && !isContainer(base) {
				base += " " + rest
			}
		}
	}
	c.base = base
	num := func(s string) int64 {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return -1
		}
		return n
	}
	switch base {
	case "varchar", "char":
		if params != "" {
			c.length = num(params)
		} else if base == "varchar" {
			c.length = math.MaxInt32 // unbounded, as Presto reports it to JDBC
		}
	case "decimal":
		p, s, _ := strings.Cut(params, ",")
		c.prec, c.scale = num(p), num(s)
	case "time", "time with time zone", "timestamp", "timestamp with time zone":
		// Without a parameter (PrestoDB names these types so) the
		// precision is milliseconds: PrestoDB's SqlTimestamp writes
		// "uuuu-MM-dd HH:mm:ss.SSS", its SqlTime "HH:mm:ss.SSS".
		c.prec = 3
		if params != "" {
			c.prec = num(params)
		}
	case "array", "map", "row":
		c.container = parseContainerType(typ)
	}
	c.scanType = scanTypeOf(base)
	return c
}

func isContainer(base string) bool { return base == "array" || base == "map" || base == "row" }

// matchingParen returns the index of the parenthesis closing the one at i,
// or -1.
func matchingParen(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// sketchTypes are the types without a textual form, which coordinators
// write as base64 like VARBINARY.
var sketchTypes = map[string]bool{
	"varbinary": true, "hyperloglog": true, "p4hyperloglog": true, "khyperloglog": true,
	"qdigest": true, "tdigest": true, "setdigest": true,
}

var (
	nullInt64Type   = reflect.TypeFor[sql.NullInt64]()
	nullInt32Type   = reflect.TypeFor[sql.NullInt32]()
	nullFloat64Type = reflect.TypeFor[sql.NullFloat64]()
	nullBoolType    = reflect.TypeFor[sql.NullBool]()
	nullStringType  = reflect.TypeFor[sql.NullString]()
	nullTimeType    = reflect.TypeFor[sql.NullTime]()
	bytesType       = reflect.TypeFor[[]byte]()
)

// scanTypeOf is the nullable type a column scans into, as trino-go-client
// reports it, so that reflect.New(ScanType()) takes a NULL too.
func scanTypeOf(base string) reflect.Type {
	switch base {
	case "bigint":
		return nullInt64Type
	case "integer", "smallint", "tinyint":
		return nullInt32Type
	case "double", "real":
		return nullFloat64Type
	case "boolean":
		return nullBoolType
	case "date", "time", "time with time zone", "timestamp", "timestamp with time zone":
		return nullTimeType
	}
	if sketchTypes[base] {
		return bytesType
	}
	return nullStringType
}

// databaseTypeName is the column's type as trino-go-client names it: the
// base name for a scalar type (DECIMAL, VARCHAR; the parameters are in
// DecimalSize and Length), the whole type for ARRAY, MAP and ROW, spelt
// as Trino spells it (PrestoDB writes no space after a comma).
func (c *column) databaseTypeName() string {
	if isContainer(c.base) {
		return strings.ToUpper(spacedCommas(c.typ))
	}
	return strings.ToUpper(c.base)
}

// value converts one value, raw as the coordinator wrote it, to the Go
// value of the column's type (see docs/types.md).
func (c *column) value(raw json.RawMessage) (driver.Value, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	v, err := c.convert(raw)
	if err != nil {
		return nil, fmt.Errorf("driver: column %q (%s): value %.64s: %w", c.name, c.typ, raw, err)
	}
	return v, nil
}

func (c *column) convert(raw json.RawMessage) (driver.Value, error) {
	switch c.base {
	case "bigint", "integer", "smallint", "tinyint":
		return strconv.ParseInt(string(raw), 10, 64)
	case "double", "real":
		if raw[0] == '"' {
			switch s, err := unquote(raw); {
			case err != nil:
				return nil, err
			case s == "NaN":
				return math.NaN(), nil
			case s == "Infinity":
				return math.Inf(1), nil
			case s == "-Infinity":
				return math.Inf(-1), nil
			default:
				return nil, fmt.Errorf("not a number")
			}
		}
		return strconv.ParseFloat(string(raw), 64)
	case "boolean":
		return strconv.ParseBool(string(raw))
	case "date":
		s, err := unquote(raw)
		if err != nil {
			return nil, err
		}
		return parseDateTime("2006-01-02", s, time.UTC)
	case "timestamp":
		s, err := unquote(raw)
		if err != nil {
			return nil, err
		}
		return parseFraction("2006-01-02 15:04:05", s, time.UTC)
	case "timestamp with time zone":
		s, err := unquote(raw)
		if err != nil {
			return nil, err
		}
		return parseTSTZ(s)
	case "time":
		s, err := unquote(raw)
		if err != nil {
			return nil, err
		}
		return parseFraction("15:04:05", s, time.UTC)
	case "time with time zone":
		s, err := unquote(raw)
		if err != nil {
			return nil, err
		}
		return parseTimeTZ(s)
	case "array", "map", "row":
		// The JSON text, the same from both servers (containers.go): a
		// BIGINT inside stays exact for a decoder with UseNumber (or
		// presto.NullSlice).
		return containerText(raw, c.container)
	}
	if raw[0] != '"' {
		// A type the driver does not know, written as a number or an
		// object: its JSON text.
		return compactJSON(raw)
	}
	s, err := unquote(raw)
	if err != nil {
		return nil, err
	}
	if sketchTypes[c.base] {
		return base64.StdEncoding.DecodeString(s)
	}
	// varchar, char, decimal, json, uuid, ipaddress, intervals and every
	// other type written as text: the text.
	return s, nil
}

func unquote(raw json.RawMessage) (string, error) {
	if raw[0] != '"' {
		return "", fmt.Errorf("not a JSON string")
	}
	if bytes.IndexByte(raw, '\\') < 0 && len(raw) >= 2 && raw[len(raw)-1] == '"' {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

func compactJSON(raw json.RawMessage) (string, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "", err
	}
	return b.String(), nil
}

// parseFraction parses s by layout, with up to nine digits of fraction
// after the seconds (Go reads them itself); finer digits (Trino's
// timestamp(12)) are cut to nanoseconds.
func parseFraction(layout, s string, loc *time.Location) (time.Time, error) {
	if i := strings.IndexByte(s, '.'); i >= 0 && len(s)-i-1 > 9 {
		s = s[:i+10]
	}
	return parseDateTime(layout, s, loc)
}

// parseTimeTZ parses a TIME WITH TIME ZONE value: Presto writes the time and
// the zone apart ("07:08:09.123 Europe/Paris", "07:08:09.123 +02:00"),
// Trino joined ("07:08:09.123+02:00"). With an offset the date is
// 0000-01-01, as for TIME and as trino-go-client has it; in a named zone it
// is 1970-01-01, the day Presto takes the zone's offset on (a zone's offset
// in year 0 is its local mean time, which no server uses).
func parseTimeTZ(s string) (time.Time, error) {
	clock, zone, ok := strings.Cut(s, " ")
	if !ok {
		i := strings.IndexAny(s, "+-")
		if i < 0 {
			return time.Time{}, fmt.Errorf("time with time zone %q: no zone", s)
		}
		clock, zone = s[:i], s[i:]
	}
	loc, err := zoneOf(zone)
	if err != nil {
		return time.Time{}, fmt.Errorf("time with time zone %q: %w", s, err)
	}
	t, err := parseFraction("15:04:05", clock, time.UTC)
	if err != nil {
		return time.Time{}, fmt.Errorf("time with time zone %q: %w", s, err)
	}
	year := 0
	if zone[0] != '+' && zone[0] != '-' && zone != "UTC" && zone != "Z" {
		year = 1970
	}
	return time.Date(year, 1, 1, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc), nil
}

// resultRows are the rows of one statement's result, read page by page
// through the Presto client's session. The transport hands each page's
// rows over as slices of the page (page.go); each row's JSON is decoded
// when it is read.
type resultRows struct {
	ctx   context.Context
	qr    *presto.QueryResults
	pages *attemptPages
	cols  []column
	data  []json.RawMessage // the current page's rows
	pos   int
	// pagesRead counts the pages of rows taken, for the error of one lost.
	pagesRead int
	// cells is reused from row to row.
	cells []json.RawMessage
}

var (
	_ driver.Rows                           = (*resultRows)(nil)
	_ driver.RowsColumnTypeScanType         = (*resultRows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*resultRows)(nil)
	_ driver.RowsColumnTypeLength           = (*resultRows)(nil)
	_ driver.RowsColumnTypeNullable         = (*resultRows)(nil)
	_ driver.RowsColumnTypePrecisionScale   = (*resultRows)(nil)
)

// newResultRows reads on until the result names its columns (a query's
// first pages may have none yet) or ends. ctx is the attempt's.
func newResultRows(ctx context.Context, qr *presto.QueryResults) (*resultRows, error) {
	r := &resultRows{ctx: ctx, qr: qr}
	if a := attemptFrom(ctx); a != nil {
		r.pages = &a.attemptPages
	}
	for len(qr.Columns) == 0 && qr.HasMoreBatch() {
		r.load() // let a page without columns go
		if err := qr.FetchNextBatch(ctx); err != nil {
			return nil, queryFailed(err, qr, attemptFrom(ctx))
		}
	}
	r.cols = newColumns(qr.Columns)
	r.load()
	return r, nil
}

// load takes the rows of the page the client decoded last.
func (r *resultRows) load() {
	r.pos = 0
	r.data = r.qr.Data
	if r.pages != nil {
		if p := r.pages.takePage(); p != nil {
			r.data = p.rows
		}
	}
	if len(r.data) > 0 {
		r.pagesRead++
	}
}

// Columns implements driver.Rows.
func (r *resultRows) Columns() []string {
	names := make([]string, len(r.cols))
	for i := range r.cols {
		names[i] = r.cols[i].name
	}
	return names
}

// Close implements driver.Rows; the caller (rows) cancels a query left
// running.
func (r *resultRows) Close() error {
	r.qr.Data, r.data = nil, nil
	if r.pages != nil {
		r.pages.takePage()
	}
	return nil
}

// Next implements driver.Rows.
func (r *resultRows) Next(dest []driver.Value) error {
	for r.pos >= len(r.data) {
		// Let the page read go before the next is read.
		r.qr.Data, r.data = nil, nil
		if !r.qr.HasMoreBatch() {
			return io.EOF
		}
		if err := r.qr.FetchNextBatch(r.ctx); err != nil {
			return queryFailed(err, r.qr, attemptFrom(r.ctx))
		}
		r.load()
	}
	raw := r.data[r.pos]
	r.data[r.pos] = nil
	r.pos++
	r.cells = r.cells[:0]
	if err := json.Unmarshal(raw, &r.cells); err != nil {
		return fmt.Errorf("driver: a row of the result is not a JSON array: %w", err)
	}
	if len(r.cells) != len(r.cols) {
		return fmt.Errorf("driver: a row of the result has %d values for %d columns", len(r.cells), len(r.cols))
	}
	for i := range dest {
		v, err := r.cols[i].value(r.cells[i])
		if err != nil {
			return err
		}
		dest[i] = v
	}
	return nil
}

func (r *resultRows) col(i int) *column {
	if i < 0 || i >= len(r.cols) {
		return nil
	}
	return &r.cols[i]
}

// ColumnTypeScanType implements driver.RowsColumnTypeScanType: a nullable
// type (sql.NullInt64...), so that scanning into reflect.New of it takes
// NULLs.
func (r *resultRows) ColumnTypeScanType(i int) reflect.Type {
	if c := r.col(i); c != nil {
		return c.scanType
	}
	return reflect.TypeFor[any]()
}

// ColumnTypeDatabaseTypeName implements
// driver.RowsColumnTypeDatabaseTypeName.
func (r *resultRows) ColumnTypeDatabaseTypeName(i int) string {
	if c := r.col(i); c != nil {
		return c.databaseTypeName()
	}
	return ""
}

// ColumnTypeLength implements driver.RowsColumnTypeLength: the n of
// VARCHAR(n) and CHAR(n); an unbounded VARCHAR reports 2^31-1.
func (r *resultRows) ColumnTypeLength(i int) (int64, bool) {
	if c := r.col(i); c != nil && c.length >= 0 {
		return c.length, true
	}
	return 0, false
}

// ColumnTypePrecisionScale implements driver.RowsColumnTypePrecisionScale:
// DECIMAL(p,s)'s p and s, and the fraction digits of TIME(p) and
// TIMESTAMP(p): 3 for PrestoDB's TIME and TIMESTAMP, which have
// milliseconds.
func (r *resultRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if c := r.col(i); c != nil && c.prec >= 0 {
		return c.prec, max(c.scale, 0), true
	}
	return 0, 0, false
}

// ColumnTypeNullable implements driver.RowsColumnTypeNullable: every
// column may hold NULL, the protocol never says otherwise.
func (r *resultRows) ColumnTypeNullable(int) (bool, bool) { return true, true }
