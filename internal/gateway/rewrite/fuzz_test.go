package rewrite

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
	"testing/iotest"
)

// fuzzFn rewrites into something that needs escaping, so that the
// encoder is exercised too.
func fuzzFn(f Field, uri string) (string, error) {
	return "gw\"\\/" + f.String() + "\u2028/" + uri, nil
}

func identity(_ Field, uri string) (string, error) { return uri, nil }

// isObject reports whether encoding/json accepts b as one JSON object.
func isObject(b []byte) bool {
	return json.Valid(b) && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{"))
}

// hasDuplicateKeys reports whether some object in b (valid JSON) has a
// key twice: encoding/json then keeps the last, while the rewriter takes
// a segment's first "type", so the two are compared only without them.
func hasDuplicateKeys(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type level struct {
		keys  map[string]bool
		isObj bool
		key   bool // the next string token is a key
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.isObj && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k := tok.(string)
			if top.keys[k] {
				return true
			}
			top.keys[k] = true
			top.key = false
			continue
		}
		if top != nil && top.isObj {
			top.key = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{keys: map[string]bool{}, isObj: true, key: true})
		case json.Delim('['):
			stack = append(stack, &level{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// reference applies fuzzFn to a decoded answer at the documented paths.
func reference(v map[string]any) {
	for key, f := range map[string]Field{"nextUri": NextURI, "partialCancelUri": PartialCancelURI, "infoUri": InfoURI} {
		if s, ok := v[key].(string); ok {
			v[key], _ = fuzzFn(f, s)
		}
	}
	data, _ := v["data"].(map[string]any)
	segs, _ := data["segments"].([]any)
	for _, e := range segs {
		seg, _ := e.(map[string]any)
		if seg["type"] != "spooled" {
			continue
		}
		for key, f := range map[string]Field{"uri": SegmentURI, "ackUri": SegmentAckURI} {
			if s, ok := seg[key].(string); ok {
				seg[key], _ = fuzzFn(f, s)
			}
		}
	}
}

func FuzzRewrite(f *testing.F) {
	for _, b := range validBodies {
		f.Add([]byte(b))
	}
	for _, b := range []string{
		`{"id":"q","infoUri":"http://c/ui/q","partialCancelUri":"http://c/v1/statement/executing/partialCancel/q/0/s/1","nextUri":"http://c/v1/statement/executing/q/s/1","columns":[{"name":"nextUri","type":"varchar"}],"data":[["nextUri",1]],"stats":{"state":"RUNNING"}}`,
		`{"data":{"encoding":"json","segments":[{"type":"spooled","uri":"https:\/\/s3\/k?sig=a%2F","ackUri":"http://c/ack","headers":{"h":["v"]},"metadata":{"uri":"m"}},{"type":"inline","data":"AA=="},{"ackUri":"a","type":"spooled"},{"uri":"x","type":"inline"}]}}`,
		`{"next\u0055ri":"\u00e9\ud83d\ude00\ud800","segments":[],"data":[{"data":{"segments":[{"type":"spooled","uri":"no"}]}}]}`,
		`{"nextUri":null,"infoUri":1,"partialCancelUri":{}}`,
		"{\"a\":\"\xff\xfe\",\"nextUri\":\"\xc3(\"}",
		`[1]`, `{"a":01}`, `{"nextUri":"\u12"}`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		valid := isObject(in)
		same, err := io.ReadAll(New(bytes.NewReader(in), identity))
		if !valid {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("encoding/json refuses %q, the rewriter gives %v", in, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if !bytes.Equal(same, in) {
			t.Fatalf("identity changed\n  %q\nto %q", in, same)
		}

		out, err := io.ReadAll(New(iotest.OneByteReader(bytes.NewReader(in)), fuzzFn))
		if err != nil {
			if errors.Is(err, ErrTooLong) {
				return
			}
			t.Fatalf("%q: %v", in, err)
		}
		whole, err := io.ReadAll(New(bytes.NewReader(in), fuzzFn))
		if err != nil || !bytes.Equal(whole, out) {
			t.Fatalf("%q: bytewise and whole reads differ: %q, %q (%v)", in, out, whole, err)
		}
		if hasDuplicateKeys(in) {
			return
		}
		var want, got map[string]any
		// Numbers as their text: json.Valid accepts numbers beyond a
		// float64, which Unmarshal into any would refuse.
		if err := decodeNumbers(in, &want); err != nil {
			t.Fatal(err)
		}
		reference(want)
		if err := decodeNumbers(out, &got); err != nil {
			t.Fatalf("output %q of %q: %v", out, in, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("input %q\noutput %q\ndecodes to %v\nwant %v", in, out, got, want)
		}
	})
}

// decodeNumbers decodes b into v keeping numbers as json.Number.
func decodeNumbers(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}
