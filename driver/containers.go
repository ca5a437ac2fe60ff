package driver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ARRAY, MAP and ROW values reach the driver in two shapes. Trino writes
// them as JSON: an array, an object, an array of the fields
// (core/trino-main/.../server/protocol/JsonEncodingUtils.java). PrestoDB
// 0.284 and later pre-serialise each of them to JSON text, pretty-printed,
// and send that text as a JSON string; a container nested in another is
// such a string inside the outer text, and a map's keys come in hash order
// (presto-main/.../server/protocol/QueryResourceUtil.java,
// prepareJsonData and parseToJson, with airlift's JsonCodec and a
// HashMap). The driver hands back one text for both: the JSON Trino
// writes, compact, nested containers as JSON, and a map's keys sorted as
// encoding/json sorts a map's, so that the same value is the same string
// whichever server ran the statement.

// containerType is a column's type parsed as far as its values need:
// which of them are arrays, maps or rows, and of what.
type containerType struct {
	kind byte // 'a' array, 'm' map, 'r' row; 0 any other type
	// elems are an array's element, a map's key and value, a row's fields.
	elems []*containerType
}

var scalarType = &containerType{}

// parseContainerType parses a type as the coordinators name it:
// array(bigint), map(varchar(1), array(integer)) (Trino) or
// map(varchar(1),array(integer)) (PrestoDB), row(x bigint, "y z" double),
// row(integer, varchar).
func parseContainerType(typ string) *containerType {
	t := strings.ToLower(strings.TrimSpace(typ))
	open := strings.IndexByte(t, '(')
	if open < 0 || !strings.HasSuffix(t, ")") {
		return scalarType
	}
	var kind byte
	switch strings.TrimSpace(t[:open]) {
	case "array":
		kind = 'a'
	case "map":
		kind = 'm'
	case "row":
		kind = 'r'
	default:
		return scalarType
	}
	ct := &containerType{kind: kind}
	for _, p := range splitTopLevel(t[open+1 : len(t)-1]) {
		if kind == 'r' {
			p = rowFieldType(p)
		}
		ct.elems = append(ct.elems, parseContainerType(p))
	}
	return ct
}

// elem is the type of the i-th element: any other type when the signature
// did not say.
func (ct *containerType) elem(i int) *containerType {
	if i < len(ct.elems) {
		return ct.elems[i]
	}
	return scalarType
}

// nested reports whether an element is itself an array, a map or a row.
func (ct *containerType) nested() bool {
	for _, e := range ct.elems {
		if e.kind != 0 {
			return true
		}
	}
	return false
}

// splitTopLevel splits a type's parameters at the commas outside
// parentheses and double-quoted names.
func splitTopLevel(s string) []string {
	var parts []string
	depth, quoted, start := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted // a doubled quote inside toggles twice
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			parts = append(parts, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(parts, strings.TrimSpace(s[start:]))
}

// rowFieldType is the type of a row's field, with or without a name:
// `"y z" double`, `x array(bigint)`, `array array(bigint)` (Trino leaves a
// field named like a type unquoted), `array(bigint)`. A type of several
// words (interval day to second) read as a name and a type is still
// neither an array, a map nor a row, which is all that matters here.
func rowFieldType(f string) string {
	if strings.HasPrefix(f, `"`) {
		for i := 1; i < len(f); i++ {
			if f[i] != '"' {
				continue
			}
			if i+1 < len(f) && f[i+1] == '"' {
				i++
				continue
			}
			return strings.TrimSpace(f[i+1:])
		}
		return f
	}
	for _, c := range []string{"array(", "map(", "row("} {
		if strings.HasPrefix(f, c) {
			return f
		}
	}
	if _, typ, ok := strings.Cut(f, " "); ok {
		return strings.TrimSpace(typ)
	}
	return f
}

// containerText returns an ARRAY, MAP or ROW value as compact JSON text,
// whichever of the two shapes it came in.
func containerText(raw json.RawMessage, ct *containerType) (string, error) {
	var b bytes.Buffer
	if err := writeContainer(&b, raw, ct); err != nil {
		return "", err
	}
	return b.String(), nil
}

// writeContainer writes raw, a value of type ct, to b as compact JSON.
func writeContainer(b *bytes.Buffer, raw json.RawMessage, ct *containerType) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return fmt.Errorf("empty value")
	}
	if string(raw) == "null" || ct.kind == 0 {
		return json.Compact(b, raw)
	}
	fromText := raw[0] == '"'
	if fromText {
		// PrestoDB's JSON text of the value.
		s, err := unquote(raw)
		if err != nil {
			return err
		}
		raw = bytes.TrimSpace([]byte(s))
		if len(raw) == 0 {
			return fmt.Errorf("empty %s text", ct.name())
		}
	}
	switch ct.kind {
	case 'a', 'r':
		if raw[0] != '[' {
			return fmt.Errorf("%s value is not a JSON array", ct.name())
		}
		if !ct.nested() {
			return json.Compact(b, raw)
		}
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return err
		}
		b.WriteByte('[')
		for i, e := range elems {
			if i > 0 {
				b.WriteByte(',')
			}
			t := ct.elem(0)
			if ct.kind == 'r' {
				t = ct.elem(i)
			}
			if err := writeContainer(b, e, t); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	default: // 'm'
		if raw[0] != '{' {
			return fmt.Errorf("map value is not a JSON object")
		}
		var entries map[string]json.RawMessage
		if err := json.Unmarshal(raw, &entries); err != nil {
			return err
		}
		keyType, valueType := ct.elem(0), ct.elem(1)
		keys := make([]string, 0, len(entries))
		values := make(map[string]json.RawMessage, len(entries))
		for k, v := range entries {
			if fromText && keyType.kind != 0 {
				// A key that is an array or a row: PrestoDB writes its
				// JSON text, Trino the Java text of its list ("[1, a]",
				// Jackson's key serialiser calls toString), which it is
				// made into.
				quoted, _ := json.Marshal(k)
				text, err := containerText(quoted, keyType)
				if err != nil {
					return fmt.Errorf("map key %.64q: %w", k, err)
				}
				if k, err = javaText(text); err != nil {
					return fmt.Errorf("map key %.64q: %w", k, err)
				}
			}
			keys = append(keys, k)
			values[k] = v
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			if err := writeContainer(b, values[k], valueType); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	}
}

// javaText is the text Java's toString gives the value of the JSON text
// js, as Jackson decoded it: a list "[1, a, null]", a map "{k=v}", a
// string without quotes.
func javaText(js string) (string, error) {
	d := json.NewDecoder(strings.NewReader(js))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", err
	}
	var b strings.Builder
	writeJava(&b, v)
	return b.String(), nil
}

func writeJava(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJava(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := slices.Sorted(maps.Keys(v))
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k)
			b.WriteByte('=')
			writeJava(b, v[k])
		}
		b.WriteByte('}')
	default:
		fmt.Fprint(b, v)
	}
}

func (ct *containerType) name() string {
	switch ct.kind {
	case 'a':
		return "array"
	case 'm':
		return "map"
	case 'r':
		return "row"
	}
	return "value"
}

// writeJSONString writes s as a JSON string, escaping as little as Jackson
// does (no HTML escapes).
func writeJSONString(b *bytes.Buffer, s string) {
	e := json.NewEncoder(b)
	e.SetEscapeHTML(false)
	_ = e.Encode(s)         // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}

// spacedCommas writes a type's name with ", " between parameters, as
// Trino does and PrestoDB does not (map(varchar,bigint)), outside quoted
// field names.
func spacedCommas(typ string) string {
	if !strings.Contains(typ, ",") {
		return typ
	}
	var b strings.Builder
	quoted := false
	for i := 0; i < len(typ); i++ {
		c := typ[i]
		b.WriteByte(c)
		switch {
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted && (i+1 == len(typ) || typ[i+1] != ' '):
			b.WriteByte(' ')
		}
	}
	return b.String()
}
