package rewrite

import (
	"encoding/binary"
	"fmt"
)

// state is where the scanner is in the JSON grammar.
type state uint8

const (
	stStart    state = iota // before the top-level object
	stEnd                   // after it: whitespace only
	stValue                 // a value (after ':', or after ',' in an array)
	stArrFirst              // after '[': a value or ']'
	stObjFirst              // after '{': a key or '}'
	stKey                   // after ',' in an object: a key
	stColon                 // after a key
	stObjNext               // after a member: ',' or '}'
	stArrNext               // after an element: ',' or ']'
	stStr                   // inside a string
	stEsc                   // after a backslash in a string
	stHex                   // inside \uXXXX
	stNumMinus              // after '-'
	stNumZero               // after a leading 0
	stNumInt                // in the integer digits
	stNumDot                // after '.'
	stNumFrac               // in the fraction digits
	stNumE                  // after 'e' or 'E'
	stNumESign              // after the exponent's sign
	stNumExp                // in the exponent digits
	stLit                   // inside true, false or null
)

// A frame is one open container: bit 0 is set for an array, the other
// bits hold its role, which says which of its keys or elements matter.
type frame uint8

const (
	roleOther frame = iota << 1 // nothing inside is looked at
	roleRoot                    // the top-level object
	roleData                    // the top-level "data" when it is an object
	roleSegs                    // data's "segments" array
	roleSeg                     // one segment object
)

const arrayBit frame = 1

// pend is what the value after the current key is, by its key and place.
type pend uint8

const (
	pendNone pend = iota
	pendNext
	pendCancel
	pendInfo
	pendData
	pendSegments
	pendSeg // an element of the segments array
	pendSegURI
	pendSegAck
	pendType
)

// strKind is what is done with the string being scanned.
type strKind uint8

const (
	strPlain   strKind = iota // passed through
	strKey                    // passed through and kept, to match the key
	strType                   // a segment's type: passed through and kept
	strURI                    // withheld and rewritten at its end
	strHeldURI                // withheld, then held until the segment's type is known
)

// segType is what is known of the current segment's "type".
type segType uint8

const (
	segUnknown segType = iota
	segSpooled
	segOther
)

// capSmall bounds what is kept of a key or a type: every name matched is
// at most 16 characters, 96 bytes even with each one \u-escaped, so a
// longer one simply does not match.
const capSmall = 128

// heldRef is a URI's raw bytes within the hold buffer.
type heldRef struct {
	start, end int
	field      Field
}

// strSpecial marks the bytes that end the fast scan of a string's
// content: its closing quote, an escape, and the control characters JSON
// does not allow unescaped.
var strSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'] = true
	t['\\'] = true
	return t
}()

// skipPlain returns the index of the first byte from i on that ends the
// plain run of a string's content (len(in) if none). String content is
// most of a page, so it is skipped eight bytes at a time: a word goes by
// whole unless one of its bytes is a quote, a backslash or below 0x20
// (the exact "has a byte equal to / less than" tests of bit twiddling).
func skipPlain(in []byte, i int) int {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	for i+8 <= len(in) {
		w := binary.LittleEndian.Uint64(in[i:])
		q, bs := w^(lsb*'"'), w^(lsb*'\\')
		if ((q-lsb)&^q|(bs-lsb)&^bs|(w-lsb*0x20)&^w)&msb != 0 {
			break
		}
		i += 8
	}
	for i < len(in) && !strSpecial[in[i]] {
		i++
	}
	return i
}

// scanner is the streaming state machine. scan is fed the input chunk by
// chunk and appends the output to out; nothing else grows with the input.
type scanner struct {
	fn    Func
	out   []byte
	state state
	stack []frame
	pend  pend

	// The current string.
	str      strKind
	isKey    bool
	field    Field
	cap      []byte // raw content kept so far (strKey, strType, strURI, strHeldURI)
	capOver  bool   // a key or type was longer than capSmall
	capStart int    // where the kept content starts in the current chunk
	hexLeft  int

	lit    string // the rest of the literal being checked
	litPos int

	// The current segment.
	seg     segType
	holding bool // output goes to hold until the segment's type is known
	hold    []byte
	refs    []heldRef

	mark    int   // start of the chunk's bytes not yet passed on
	pos     int64 // input bytes before the current chunk
	discard bool  // FirstURI: no output is wanted
}

func (s *scanner) init(fn Func) {
	s.fn = fn
	s.stack = make([]frame, 0, 16)
}

func (s *scanner) syntax(i int, format string, args ...any) error {
	return &SyntaxError{Offset: s.pos + int64(i), msg: fmt.Sprintf(format, args...)}
}

// finish checks, at the end of the input, that the object was complete.
func (s *scanner) finish() error {
	if s.state != stEnd {
		return &SyntaxError{Offset: s.pos, msg: "unexpected end of JSON input", cut: true}
	}
	return nil
}

// emit passes bytes on: to the hold while a segment waits for its type,
// otherwise to the output.
func (s *scanner) emit(b []byte) error {
	if s.holding {
		if len(s.hold)+len(b) > MaxSegmentHold {
			return fmt.Errorf("rewrite: a spooled segment's uri at offset about %d comes more than %d bytes before its type: %w",
				s.pos, MaxSegmentHold, ErrTooLong)
		}
		s.hold = append(s.hold, b...)
		return nil
	}
	if !s.discard {
		s.out = append(s.out, b...)
	}
	return nil
}

// flush passes on the chunk's bytes up to i.
func (s *scanner) flush(in []byte, i int) error {
	if i <= s.mark {
		return nil
	}
	err := s.emit(in[s.mark:i])
	s.mark = i
	return err
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// afterValue moves on once a value is complete.
func (s *scanner) afterValue() {
	switch {
	case len(s.stack) == 0:
		s.state = stEnd
	case s.stack[len(s.stack)-1]&arrayBit != 0:
		s.state = stArrNext
	default:
		s.state = stObjNext
	}
}

func (s *scanner) top() frame {
	if len(s.stack) == 0 {
		return roleOther
	}
	return s.stack[len(s.stack)-1]
}

func (s *scanner) push(i int, f frame) error {
	if len(s.stack) >= MaxDepth {
		return s.syntax(i, "nesting deeper than %d", MaxDepth)
	}
	s.stack = append(s.stack, f)
	return nil
}

// scan consumes one chunk of input.
func (s *scanner) scan(in []byte) error {
	s.mark, s.capStart = 0, 0
	i := 0
	for i < len(in) {
		c := in[i]
		switch s.state {
		case stStr:
			i = skipPlain(in, i)
			if i == len(in) {
				break
			}
			switch c = in[i]; c {
			case '"':
				if err := s.endString(in, i); err != nil {
					return err
				}
			case '\\':
				s.state = stEsc
			default:
				return s.syntax(i, "control character %#x in string", c)
			}
			i++

		case stNumInt, stNumFrac, stNumExp:
			for i < len(in) && '0' <= in[i] && in[i] <= '9' {
				i++
			}
			if i == len(in) {
				break
			}
			if c = in[i]; c == ',' || c == ']' || c == '}' {
				s.afterValue() // the common end of a number, without the call
				break
			}
			if err := s.numberStep(c, i); err != nil {
				return err
			}
			if s.state >= stNumMinus && s.state <= stNumExp {
				i++
			}

		case stNumMinus, stNumZero, stNumDot, stNumE, stNumESign:
			if err := s.numberStep(c, i); err != nil {
				return err
			}
			if s.state >= stNumMinus && s.state <= stNumExp {
				i++
			}

		case stArrNext:
			switch {
			case c == ',':
				s.state = stValue
			case c == ']':
				s.stack = s.stack[:len(s.stack)-1]
				s.afterValue()
			case !isSpace(c):
				return s.syntax(i, "invalid character %q after array element", c)
			}
			i++

		case stValue:
			if !isSpace(c) {
				if err := s.beginValue(in, i); err != nil {
					return err
				}
			}
			i++

		case stObjNext:
			switch {
			case c == ',':
				s.state = stKey
			case c == '}':
				if err := s.endObject(in, i); err != nil {
					return err
				}
			case !isSpace(c):
				return s.syntax(i, "invalid character %q after object member", c)
			}
			i++

		case stColon:
			switch {
			case c == ':':
				s.state = stValue
			case !isSpace(c):
				return s.syntax(i, "invalid character %q after object key", c)
			}
			i++

		case stKey, stObjFirst:
			switch {
			case c == '"':
				if err := s.beginString(in, i, pendNone, true); err != nil {
					return err
				}
			case c == '}' && s.state == stObjFirst:
				if err := s.endObject(in, i); err != nil {
					return err
				}
			case !isSpace(c):
				return s.syntax(i, "invalid character %q looking for an object key", c)
			}
			i++

		case stArrFirst:
			switch {
			case c == ']':
				s.stack = s.stack[:len(s.stack)-1]
				s.afterValue()
			case !isSpace(c):
				if err := s.beginValue(in, i); err != nil {
					return err
				}
			}
			i++

		case stEsc:
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.state = stStr
			case 'u':
				s.state, s.hexLeft = stHex, 4
			default:
				return s.syntax(i, "invalid escape \\%c in string", c)
			}
			i++

		case stHex:
			if !isHex(c) {
				return s.syntax(i, "invalid character %q in \\u escape", c)
			}
			if s.hexLeft--; s.hexLeft == 0 {
				s.state = stStr
			}
			i++

		case stLit:
			if c != s.lit[s.litPos] {
				return s.syntax(i, "invalid character %q in literal", c)
			}
			if s.litPos++; s.litPos == len(s.lit) {
				s.afterValue()
			}
			i++

		case stStart:
			switch {
			case c == '{':
				s.stack = append(s.stack, roleRoot)
				s.state = stObjFirst
			case !isSpace(c):
				return s.syntax(i, "invalid character %q: the answer is not a JSON object", c)
			}
			i++

		case stEnd:
			if !isSpace(c) {
				return s.syntax(i, "invalid character %q after the top-level object", c)
			}
			i++
		}
	}

	inString := s.state == stStr || s.state == stEsc || s.state == stHex
	if inString && s.str != strPlain {
		if err := s.keep(in[s.capStart:]); err != nil {
			return err
		}
	}
	var err error
	if inString && (s.str == strURI || s.str == strHeldURI) {
		s.mark = len(in) // withheld: it is in cap
	} else {
		err = s.flush(in, len(in))
	}
	s.pos += int64(len(in))
	return err
}

// numberStep takes one byte c that is not a digit continuing the integer,
// fraction or exponent (or any byte in the other number states). A byte
// that ends the number is left for the state after the value.
func (s *scanner) numberStep(c byte, i int) error {
	digit := '0' <= c && c <= '9'
	switch s.state {
	case stNumMinus:
		switch {
		case c == '0':
			s.state = stNumZero
		case digit:
			s.state = stNumInt
		default:
			return s.syntax(i, "invalid character %q in number", c)
		}
		return nil
	case stNumDot:
		if !digit {
			return s.syntax(i, "invalid character %q after decimal point", c)
		}
		s.state = stNumFrac
		return nil
	case stNumE:
		switch {
		case c == '+' || c == '-':
			s.state = stNumESign
		case digit:
			s.state = stNumExp
		default:
			return s.syntax(i, "invalid character %q in exponent", c)
		}
		return nil
	case stNumESign:
		if !digit {
			return s.syntax(i, "invalid character %q in exponent", c)
		}
		s.state = stNumExp
		return nil
	case stNumZero, stNumInt:
		switch c {
		case '.':
			s.state = stNumDot
			return nil
		case 'e', 'E':
			s.state = stNumE
			return nil
		}
	case stNumFrac:
		if c == 'e' || c == 'E' {
			s.state = stNumE
			return nil
		}
	}
	// The number ended (a digit after a leading zero ends it too, and
	// is then refused by the state after the value).
	s.afterValue()
	return nil
}

// beginValue takes the first byte of a value at in[i].
func (s *scanner) beginValue(in []byte, i int) error {
	c := in[i]
	ctx := s.pend
	s.pend = pendNone
	if s.top() == roleSegs|arrayBit {
		ctx = pendSeg
	}
	if ctx == pendType && c != '"' && s.seg == segUnknown {
		// A type that is not a string is not "spooled".
		if err := s.resolve(in, i, segOther); err != nil {
			return err
		}
	}
	switch c {
	case '{':
		role := roleOther
		switch ctx {
		case pendData:
			role = roleData
		case pendSeg:
			role = roleSeg
			s.seg = segUnknown
		}
		if err := s.push(i, role); err != nil {
			return err
		}
		s.state = stObjFirst
	case '[':
		role := roleOther
		if ctx == pendSegments {
			role = roleSegs
		}
		if err := s.push(i, role|arrayBit); err != nil {
			return err
		}
		s.state = stArrFirst
	case '"':
		return s.beginString(in, i, ctx, false)
	case '-':
		s.state = stNumMinus
	case '0':
		s.state = stNumZero
	case '1', '2', '3', '4', '5', '6', '7', '8', '9':
		s.state = stNumInt
	case 't':
		s.state, s.lit, s.litPos = stLit, "true", 1
	case 'f':
		s.state, s.lit, s.litPos = stLit, "false", 1
	case 'n':
		s.state, s.lit, s.litPos = stLit, "null", 1
	default:
		return s.syntax(i, "invalid character %q looking for a value", c)
	}
	return nil
}

// beginString takes the opening quote at in[q] of a key or of a value
// whose place is ctx.
func (s *scanner) beginString(in []byte, q int, ctx pend, isKey bool) error {
	s.state = stStr
	s.isKey = isKey
	s.str = strPlain
	s.cap = s.cap[:0]
	s.capOver = false
	s.capStart = q + 1
	if isKey {
		switch s.top() {
		case roleRoot, roleData, roleSeg:
			s.str = strKey
		}
		return nil
	}
	switch ctx {
	case pendNext:
		s.str, s.field = strURI, NextURI
	case pendCancel:
		s.str, s.field = strURI, PartialCancelURI
	case pendInfo:
		s.str, s.field = strURI, InfoURI
	case pendSegURI, pendSegAck:
		s.field = SegmentURI
		if ctx == pendSegAck {
			s.field = SegmentAckURI
		}
		switch s.seg {
		case segSpooled:
			s.str = strURI
		case segUnknown:
			s.str = strHeldURI
		}
	case pendType:
		if s.seg == segUnknown {
			s.str = strType
		}
	}
	if s.str == strURI || s.str == strHeldURI {
		// Pass on everything up to and including the opening quote;
		// the content is withheld from here.
		if err := s.flush(in, q+1); err != nil {
			return err
		}
		if s.str == strHeldURI {
			s.holding = true
		}
	}
	return nil
}

// keep appends raw string content to cap, within the string's bound.
func (s *scanner) keep(b []byte) error {
	switch s.str {
	case strKey, strType:
		if s.capOver || len(s.cap)+len(b) > capSmall {
			s.capOver = true
			return nil
		}
	default:
		if len(s.cap)+len(b) > MaxURI {
			return fmt.Errorf("rewrite: %s value at offset about %d longer than %d bytes: %w",
				s.field, s.pos, MaxURI, ErrTooLong)
		}
	}
	s.cap = append(s.cap, b...)
	return nil
}

// endString takes the closing quote at in[j].
func (s *scanner) endString(in []byte, j int) error {
	if s.str != strPlain {
		if err := s.keep(in[s.capStart:j]); err != nil {
			return err
		}
	}
	if s.isKey {
		s.pend = pendNone
	}
	switch s.str {
	case strKey:
		if !s.capOver {
			s.pend = keyPend(s.top(), s.cap)
		}
	case strType:
		t := segOther
		if !s.capOver && unquote(s.cap) == "spooled" {
			t = segSpooled
		}
		if err := s.resolve(in, j, t); err != nil {
			return err
		}
	case strURI:
		s.mark = j
		if err := s.rewrite(s.field, s.cap); err != nil {
			return err
		}
	case strHeldURI:
		s.mark = j
		start := len(s.hold)
		if err := s.emit(s.cap); err != nil {
			return err
		}
		s.refs = append(s.refs, heldRef{start: start, end: len(s.hold), field: s.field})
	}
	s.str = strPlain
	if s.isKey {
		s.state = stColon
	} else {
		s.afterValue()
	}
	return nil
}

// keyPend tells what the value of the key raw (still escaped) is, in an
// object of role f.
func keyPend(f frame, raw []byte) pend {
	key := unquote(raw)
	switch f {
	case roleRoot:
		switch key {
		case "nextUri":
			return pendNext
		case "partialCancelUri":
			return pendCancel
		case "infoUri":
			return pendInfo
		case "data":
			return pendData
		}
	case roleData:
		if key == "segments" {
			return pendSegments
		}
	case roleSeg:
		switch key {
		case "uri":
			return pendSegURI
		case "ackUri":
			return pendSegAck
		case "type":
			return pendType
		}
	}
	return pendNone
}

// endObject takes the '}' at in[i].
func (s *scanner) endObject(in []byte, i int) error {
	f := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	if f == roleSeg && s.seg == segUnknown {
		// No type at all: not a spooled segment.
		if err := s.resolve(in, i, segOther); err != nil {
			return err
		}
	}
	s.afterValue()
	return nil
}

// resolve records the current segment's type, learnt at in[i], and
// passes on what was held for it: rewritten if the segment is spooled,
// as it was otherwise.
func (s *scanner) resolve(in []byte, i int, t segType) error {
	s.seg = t
	if !s.holding {
		return nil
	}
	if err := s.flush(in, i); err != nil {
		return err
	}
	s.holding = false
	prev := 0
	if t == segSpooled {
		for _, r := range s.refs {
			s.out = append(s.out, s.hold[prev:r.start]...)
			if err := s.rewrite(r.field, s.hold[r.start:r.end]); err != nil {
				return err
			}
			prev = r.end
		}
	}
	if !s.discard {
		s.out = append(s.out, s.hold[prev:]...)
	}
	s.hold = s.hold[:0]
	s.refs = s.refs[:0]
	return nil
}

// rewrite passes the URI whose raw content is raw through fn and passes
// on the result, or raw itself when fn leaves the URI as it was.
func (s *scanner) rewrite(f Field, raw []byte) error {
	if s.fn == nil {
		return s.emit(raw)
	}
	uri := unquote(raw)
	v, err := s.fn(f, uri)
	if err != nil {
		return fmt.Errorf("rewrite %s: %w", f, err)
	}
	if v == uri {
		return s.emit(raw)
	}
	if s.discard {
		return nil
	}
	// Never held: a URI is rewritten only once its segment is known to
	// be spooled, when nothing is held any more.
	s.out = appendQuoted(s.out, v)
	return nil
}
