package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Output formats under presto-cli's names (--output-format), written as
// presto-cli writes them.
const (
	formatAligned   = "ALIGNED"
	formatVertical  = "VERTICAL"
	formatCSV       = "CSV"
	formatCSVHeader = "CSV_HEADER"
	formatTSV       = "TSV"
	formatTSVHeader = "TSV_HEADER"
	formatJSON      = "JSON"
	formatNull      = "NULL"
)

// prestoFormats lists presto-cli's output formats in its own order, for
// messages and help.
var prestoFormats = []string{formatAligned, formatVertical, formatCSV, formatCSVHeader, formatTSV, formatTSVHeader, formatJSON, formatNull}

// printer writes one result set: the column names, then each row, then
// whatever ends the output (a footer).
type printer interface {
	header(cols []string) error
	row(values []any) error
	finish() error
}

// newPrinter returns the printer of a presto-cli output format (any case).
func newPrinter(format string, w io.Writer) (printer, error) {
	switch strings.ToUpper(format) {
	case formatAligned:
		return &alignedPrinter{w: w}, nil
	case formatVertical:
		return &verticalPrinter{w: w}, nil
	case formatCSV, formatCSVHeader:
		return &delimitedPrinter{w: w, withHeader: strings.EqualFold(format, formatCSVHeader), csv: true}, nil
	case formatTSV, formatTSVHeader:
		return &delimitedPrinter{w: w, withHeader: strings.EqualFold(format, formatTSVHeader)}, nil
	case formatJSON:
		return &jsonLinesPrinter{w: w}, nil
	case formatNull:
		return nullPrinter{}, nil
	}
	return nil, fmt.Errorf("--output-format %q: want one of %s", format, strings.Join(prestoFormats, ", "))
}

// printRows prints rows with p.
func printRows(rows *sql.Rows, p printer) error {
	if err := scanRows(rows, p.header, p.row); err != nil {
		return err
	}
	return p.finish()
}

// displayText renders a value as presto-cli's text formats do: NULL for
// null, bytes as a hex dump.
func displayText(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return hexDump(v, 0)
	}
	return cellText(v, "NULL")
}

// hexDump writes b as lower-case hex pairs separated by spaces, perLine
// pairs a line (all on one line when perLine is 0).
func hexDump(b []byte, perLine int) string {
	var sb strings.Builder
	for i, c := range b {
		if i > 0 {
			if perLine > 0 && i%perLine == 0 {
				sb.WriteByte('\n')
			} else {
				sb.WriteByte(' ')
			}
		}
		sb.WriteString(strconv.FormatUint(uint64(c)>>4, 16))
		sb.WriteString(strconv.FormatUint(uint64(c)&0xf, 16))
	}
	return sb.String()
}

func isNumber(v any) bool {
	switch v.(type) {
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, json.Number:
		return true
	}
	return false
}

// width is the number of terminal cells s takes (runes; wide characters
// are not told apart).
func width(s string) int { return utf8.RuneCountInString(s) }

func maxLineWidth(s string) int {
	n := 0
	for line := range strings.SplitSeq(s, "\n") {
		n = max(n, width(line))
	}
	return n
}

// alignedBatch is how many rows the aligned format measures at once:
// presto-cli sizes the columns per batch of rows too, so that a long result
// streams instead of being held whole.
const alignedBatch = 10000

// alignedPrinter is presto-cli's ALIGNED format: a table with centred
// column names, numbers aligned right, multi-line values continued with
// "+", and a "(N rows)" footer.
type alignedPrinter struct {
	w       io.Writer
	cols    []string
	batch   [][]any
	started bool
	count   int64
}

func (p *alignedPrinter) header(cols []string) error { p.cols = cols; return nil }

func (p *alignedPrinter) row(values []any) error {
	p.batch = append(p.batch, slices.Clone(values))
	if len(p.batch) >= alignedBatch {
		return p.flush(false)
	}
	return nil
}

func (p *alignedPrinter) finish() error {
	if err := p.flush(true); err != nil {
		return err
	}
	s := "s"
	if p.count == 1 {
		s = ""
	}
	_, err := fmt.Fprintf(p.w, "(%d row%s)\n", p.count, s)
	return err
}

func (p *alignedPrinter) flush(complete bool) error {
	rows := p.batch
	p.batch = p.batch[:0]
	p.count += int64(len(rows))
	widths := make([]int, len(p.cols))
	for i, c := range p.cols {
		widths[i] = max(1, width(c))
	}
	text := make([][]string, len(rows))
	for r, row := range rows {
		text[r] = make([]string, len(row))
		for i, v := range row {
			if b, ok := v.([]byte); ok {
				text[r][i] = hexDump(b, 16)
			} else {
				text[r][i] = displayText(v)
			}
			widths[i] = max(widths[i], maxLineWidth(text[r][i]))
		}
	}
	var b strings.Builder
	if !p.started {
		p.started = true
		for i, c := range p.cols {
			if i > 0 {
				b.WriteByte('|')
			}
			left := (widths[i] - width(c)) / 2
			right := widths[i] - left - width(c)
			b.WriteString(strings.Repeat(" ", left+1) + c + strings.Repeat(" ", right+1))
		}
		b.WriteByte('\n')
		for i := range p.cols {
			if i > 0 {
				b.WriteByte('+')
			}
			b.WriteString(strings.Repeat("-", widths[i]+2))
		}
		b.WriteByte('\n')
	}
	for r, row := range rows {
		lines := make([][]string, len(row))
		n := 1
		for i := range row {
			lines[i] = strings.Split(text[r][i], "\n")
			n = max(n, len(lines[i]))
		}
		for line := range n {
			for i, v := range row {
				if i > 0 {
					b.WriteByte('|')
				}
				s := ""
				if line < len(lines[i]) {
					s = lines[i][line]
				}
				pad := strings.Repeat(" ", widths[i]-width(s)+1)
				out := " " + s + pad
				if isNumber(v) {
					out = pad + s + " "
				}
				if (!complete || p.count > 1) && line+1 < len(lines[i]) {
					out = out[:len(out)-1] + "+"
				}
				b.WriteString(out)
			}
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

// verticalPrinter is presto-cli's VERTICAL format: one "-[ RECORD N ]-"
// block per row, a "name | value" line per column.
type verticalPrinter struct {
	w          io.Writer
	cols       []string
	namesWidth int
	count      int64
}

func (p *verticalPrinter) header(cols []string) error {
	p.cols = cols
	for _, c := range cols {
		p.namesWidth = max(p.namesWidth, width(c))
	}
	return nil
}

func (p *verticalPrinter) row(values []any) error {
	p.count++
	text := make([]string, len(values))
	valuesWidth := 0
	for i, v := range values {
		text[i] = displayText(v)
		valuesWidth = max(valuesWidth, maxLineWidth(text[i]))
	}
	var b strings.Builder
	header := "-[ RECORD " + strconv.FormatInt(p.count, 10) + " ]"
	if p.namesWidth+1 >= len(header) {
		header += strings.Repeat("-", p.namesWidth+1-len(header)) + "+"
	}
	header += strings.Repeat("-", max(0, p.namesWidth+valuesWidth+3-len(header)))
	b.WriteString(header + "\n")
	for i, name := range p.cols {
		for line := range strings.SplitSeq(text[i], "\n") {
			b.WriteString(name + strings.Repeat(" ", p.namesWidth-width(name)) + " | " + line + "\n")
			name = strings.Repeat(" ", width(name))
		}
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

func (p *verticalPrinter) finish() error {
	if p.count == 0 {
		_, err := io.WriteString(p.w, "(no rows)\n")
		return err
	}
	return nil
}

// delimitedPrinter is presto-cli's CSV (every value quoted, quotes doubled)
// and TSV (tab, newline, backslash and a few control characters escaped
// with a backslash) formats, with or without a header line. NULL is an
// empty field.
type delimitedPrinter struct {
	w          io.Writer
	withHeader bool
	csv        bool
}

func (p *delimitedPrinter) header(cols []string) error {
	if !p.withHeader {
		return nil
	}
	values := make([]any, len(cols))
	for i, c := range cols {
		values[i] = c
	}
	return p.row(values)
}

var tsvEscaper = strings.NewReplacer("\\", `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`, "\x00", `\0`, "\b", `\b`, "\f", `\f`)

func (p *delimitedPrinter) row(values []any) error {
	var b strings.Builder
	for i, v := range values {
		s := ""
		if v != nil {
			s = displayText(v)
		}
		if p.csv {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + strings.ReplaceAll(s, `"`, `""`) + `"`)
		} else {
			if i > 0 {
				b.WriteByte('\t')
			}
			b.WriteString(tsvEscaper.Replace(s))
		}
	}
	b.WriteByte('\n')
	_, err := io.WriteString(p.w, b.String())
	return err
}

func (p *delimitedPrinter) finish() error { return nil }

// jsonLinesPrinter is presto-cli's JSON format: one object per row on its
// own line, keys in column order.
type jsonLinesPrinter struct {
	w    io.Writer
	keys [][]byte
}

func (p *jsonLinesPrinter) header(cols []string) error {
	p.keys = make([][]byte, len(cols))
	for i, c := range cols {
		k, err := json.Marshal(c)
		if err != nil {
			return err
		}
		p.keys[i] = k
	}
	return nil
}

func (p *jsonLinesPrinter) row(values []any) error {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range values {
		if i > 0 {
			b.WriteByte(',')
		}
		val, err := json.Marshal(jsonValue(v))
		if err != nil {
			return fmt.Errorf("column %s: %w", p.keys[i], err)
		}
		b.Write(p.keys[i])
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteString("}\n")
	_, err := io.WriteString(p.w, b.String())
	return err
}

func (p *jsonLinesPrinter) finish() error { return nil }

// nullPrinter is presto-cli's NULL format: the rows are read and dropped.
type nullPrinter struct{}

func (nullPrinter) header([]string) error { return nil }
func (nullPrinter) row([]any) error       { return nil }
func (nullPrinter) finish() error         { return nil }
