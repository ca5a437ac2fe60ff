package rewrite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// call is one invocation of the rewrite function.
type call struct {
	field Field
	uri   string
}

// recorder is a rewrite function that prefixes every URI with its field,
// and the calls it saw.
type recorder struct{ calls []call }

func (r *recorder) fn(f Field, uri string) (string, error) {
	r.calls = append(r.calls, call{f, uri})
	return "GW/" + f.String() + "/" + uri, nil
}

// readers are the ways a body is fed and read: whole, a byte at a time
// (so that every state meets a chunk boundary), and through WriteTo.
var readers = []struct {
	name string
	read func(in string, fn Func) ([]byte, error)
}{
	{"whole", func(in string, fn Func) ([]byte, error) {
		return io.ReadAll(New(strings.NewReader(in), fn))
	}},
	{"bytewise", func(in string, fn Func) ([]byte, error) {
		return io.ReadAll(iotest.OneByteReader(New(iotest.OneByteReader(strings.NewReader(in)), fn)))
	}},
	{"writeto", func(in string, fn Func) ([]byte, error) {
		var b bytes.Buffer
		_, err := io.Copy(&b, New(iotest.HalfReader(strings.NewReader(in)), fn))
		return b.Bytes(), err
	}},
}

func TestRewrite(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		calls          []call
	}{
		{
			name: "every top-level field",
			in:   `{"id":"q1","infoUri":"http://c:8080/ui/query.html?q1","partialCancelUri":"http://c/v1/statement/executing/partialCancel/q1/0/y/1","nextUri":"http://c/v1/statement/executing/q1/y/1","stats":{"state":"RUNNING"}}`,
			want: `{"id":"q1","infoUri":"GW/infoUri/http://c:8080/ui/query.html?q1","partialCancelUri":"GW/partialCancelUri/http://c/v1/statement/executing/partialCancel/q1/0/y/1","nextUri":"GW/nextUri/http://c/v1/statement/executing/q1/y/1","stats":{"state":"RUNNING"}}`,
			calls: []call{
				{InfoURI, "http://c:8080/ui/query.html?q1"},
				{PartialCancelURI, "http://c/v1/statement/executing/partialCancel/q1/0/y/1"},
				{NextURI, "http://c/v1/statement/executing/q1/y/1"},
			},
		},
		{
			name: "decoys in rows, nested objects and string values",
			in: `{"columns":[{"name":"nextUri","type":"varchar","nextUri":"col"}],` +
				`"data":[["nextUri","{\"nextUri\":\"http://x\"}",{"nextUri":"deep","infoUri":"deep"}],[{"data":{"segments":[{"type":"spooled","uri":"u"}]}}]],` +
				`"stats":{"nextUri":"s","rootStage":{"infoUri":"s"}},"nextUriX":"a","next":"b","NextUri":"c",` +
				`"warnings":[{"message":"\"nextUri\":\"w\""}],"nextUri":"n"}`,
			want: `{"columns":[{"name":"nextUri","type":"varchar","nextUri":"col"}],` +
				`"data":[["nextUri","{\"nextUri\":\"http://x\"}",{"nextUri":"deep","infoUri":"deep"}],[{"data":{"segments":[{"type":"spooled","uri":"u"}]}}]],` +
				`"stats":{"nextUri":"s","rootStage":{"infoUri":"s"}},"nextUriX":"a","next":"b","NextUri":"c",` +
				`"warnings":[{"message":"\"nextUri\":\"w\""}],"nextUri":"GW/nextUri/n"}`,
			calls: []call{{NextURI, "n"}},
		},
		{
			name:  "escaped slashes are decoded for fn and not written back",
			in:    `{"nextUri":"http:\/\/c:8080\/v1\/statement\/q\/1"}`,
			want:  `{"nextUri":"GW/nextUri/http://c:8080/v1/statement/q/1"}`,
			calls: []call{{NextURI, "http://c:8080/v1/statement/q/1"}},
		},
		{
			name:  "unicode escapes and a surrogate pair",
			in:    `{"nextUri":"http://c/\u00e9/\ud83d\ude00/\u0041\"\\"}`,
			want:  `{"nextUri":"GW/nextUri/http://c/é/😀/A\"\\"}`,
			calls: []call{{NextURI, "http://c/é/😀/A\"\\"}},
		},
		{
			name:  "a lone surrogate becomes U+FFFD as encoding/json decodes it",
			in:    `{"nextUri":"a\ud800b"}`,
			want:  `{"nextUri":"GW/nextUri/a` + "\uFFFD" + `b"}`,
			calls: []call{{NextURI, "a\uFFFDb"}},
		},
		{
			name:  "an escaped key is the same key",
			in:    `{"next\u0055ri":"n","\u0069nfoUri":"i"}`,
			want:  `{"next\u0055ri":"GW/nextUri/n","\u0069nfoUri":"GW/infoUri/i"}`,
			calls: []call{{NextURI, "n"}, {InfoURI, "i"}},
		},
		{
			name:  "whitespace everywhere is kept",
			in:    " \r\n\t{ \"nextUri\" :\n\t\"u\" ,\r\n\"infoUri\"\n:\"v\"\t,\"data\" : [ [ 1 , 2.5e-3 , -0 , true , null ] ] }\n \t",
			want:  " \r\n\t{ \"nextUri\" :\n\t\"GW/nextUri/u\" ,\r\n\"infoUri\"\n:\"GW/infoUri/v\"\t,\"data\" : [ [ 1 , 2.5e-3 , -0 , true , null ] ] }\n \t",
			calls: []call{{NextURI, "u"}, {InfoURI, "v"}},
		},
		{
			name:  "numbers are not reformatted",
			in:    `{"data":[[1E+300,-0.0000,12345678901234567890123,0,1e5,3.14159265358979323846]],"updateCount":0}`,
			want:  `{"data":[[1E+300,-0.0000,12345678901234567890123,0,1e5,3.14159265358979323846]],"updateCount":0}`,
			calls: nil,
		},
		{
			name:  "an empty URI is still a URI",
			in:    `{"nextUri":""}`,
			want:  `{"nextUri":"GW/nextUri/"}`,
			calls: []call{{NextURI, ""}},
		},
		{
			name: "missing, null and non-string fields are left alone",
			in:   `{"id":"q","nextUri":null,"infoUri":5,"partialCancelUri":{"nextUri":"x"},"stats":{}}`,
			want: `{"id":"q","nextUri":null,"infoUri":5,"partialCancelUri":{"nextUri":"x"},"stats":{}}`,
		},
		{
			name: "an empty object",
			in:   `{}`,
			want: `{}`,
		},
		{
			name:  "a Presto error answer",
			in:    `{"id":"q","infoUri":"http://c/ui/q","stats":{"state":"FAILED"},"error":{"message":"line 1:1: mismatched input","errorCode":1,"errorLocation":{"lineNumber":1}}}`,
			want:  `{"id":"q","infoUri":"GW/infoUri/http://c/ui/q","stats":{"state":"FAILED"},"error":{"message":"line 1:1: mismatched input","errorCode":1,"errorLocation":{"lineNumber":1}}}`,
			calls: []call{{InfoURI, "http://c/ui/q"}},
		},
		{
			name: "spooled segments: uri and ackUri rewritten, headers and metadata kept, inline untouched",
			in: `{"id":"q","nextUri":"n","data":{"encoding":"json+zstd","segments":[` +
				`{"type":"spooled","uri":"https://s3/b/k?X-Amz-Signature=ab%2Fc&x=1","ackUri":"http://c/v1/spooled/ack/k","metadata":{"segmentSize":12,"uri":"m"},"headers":{"x-amz-server-side-encryption-customer-key":["a\/b+c=="],"uri":["h"],"type":"inline"}},` +
				`{"type":"inline","data":"WzEsMl0=","metadata":{"rowOffset":0,"rowsCount":1,"segmentSize":5}},` +
				`{ "type" : "spooled" , "uri" : "u2" }` +
				`]},"stats":{}}`,
			want: `{"id":"q","nextUri":"GW/nextUri/n","data":{"encoding":"json+zstd","segments":[` +
				`{"type":"spooled","uri":"GW/uri/https://s3/b/k?X-Amz-Signature=ab%2Fc&x=1","ackUri":"GW/ackUri/http://c/v1/spooled/ack/k","metadata":{"segmentSize":12,"uri":"m"},"headers":{"x-amz-server-side-encryption-customer-key":["a\/b+c=="],"uri":["h"],"type":"inline"}},` +
				`{"type":"inline","data":"WzEsMl0=","metadata":{"rowOffset":0,"rowsCount":1,"segmentSize":5}},` +
				`{ "type" : "spooled" , "uri" : "GW/uri/u2" }` +
				`]},"stats":{}}`,
			calls: []call{
				{NextURI, "n"},
				{SegmentURI, "https://s3/b/k?X-Amz-Signature=ab%2Fc&x=1"},
				{SegmentAckURI, "http://c/v1/spooled/ack/k"},
				{SegmentURI, "u2"},
			},
		},
		{
			name: "a segment's uri before its type waits for the type",
			in: `{"data":{"segments":[` +
				`{"uri":"u1","headers":{"a":["b"]},"ackUri":"a1","type":"spooled"},` +
				`{"uri":"u2","type":"inline"},` +
				`{"ackUri":"a3","type":7,"uri":"u3"},` +
				`{"uri":"u4"},` +
				`{"uri":"u5","type":"spooled","type":"inline","ackUri":"a5"}` +
				`]}}`,
			want: `{"data":{"segments":[` +
				`{"uri":"GW/uri/u1","headers":{"a":["b"]},"ackUri":"GW/ackUri/a1","type":"spooled"},` +
				`{"uri":"u2","type":"inline"},` +
				`{"ackUri":"a3","type":7,"uri":"u3"},` +
				`{"uri":"u4"},` +
				`{"uri":"GW/uri/u5","type":"spooled","type":"inline","ackUri":"GW/ackUri/a5"}` +
				`]}}`,
			calls: []call{{SegmentURI, "u1"}, {SegmentAckURI, "a1"}, {SegmentURI, "u5"}, {SegmentAckURI, "a5"}},
		},
		{
			name: "segments anywhere else are not the protocol's",
			in:   `{"segments":[{"type":"spooled","uri":"a"}],"data":{"x":{"segments":[{"type":"spooled","uri":"b"}]},"segments":{"type":"spooled","uri":"c"}},"stats":{"data":{"segments":[{"type":"spooled","uri":"d"}]}}}`,
			want: `{"segments":[{"type":"spooled","uri":"a"}],"data":{"x":{"segments":[{"type":"spooled","uri":"b"}]},"segments":{"type":"spooled","uri":"c"}},"stats":{"data":{"segments":[{"type":"spooled","uri":"d"}]}}}`,
		},
		{
			name:  "an escaped segment type",
			in:    `{"data":{"segments":[{"type":"sp\u006foled","uri":"u"}]}}`,
			want:  `{"data":{"segments":[{"type":"sp\u006foled","uri":"GW/uri/u"}]}}`,
			calls: []call{{SegmentURI, "u"}},
		},
		{
			name:  "rows of nested arrays and objects after a spooled data key",
			in:    `{"data":[[[1,[2,{"a":[3]}]],{"b":{"c":[]}}]],"nextUri":"n"}`,
			want:  `{"data":[[[1,[2,{"a":[3]}]],{"b":{"c":[]}}]],"nextUri":"GW/nextUri/n"}`,
			calls: []call{{NextURI, "n"}},
		},
	} {
		for _, rd := range readers {
			t.Run(tc.name+"/"+rd.name, func(t *testing.T) {
				var rec recorder
				got, err := rd.read(tc.in, rec.fn)
				if err != nil {
					t.Fatalf("error: %v", err)
				}
				if string(got) != tc.want {
					t.Errorf("output\n got %s\nwant %s", got, tc.want)
				}
				if fmt.Sprint(rec.calls) != fmt.Sprint(tc.calls) {
					t.Errorf("calls\n got %v\nwant %v", rec.calls, tc.calls)
				}
				if !json.Valid(got) {
					t.Errorf("output is not valid JSON")
				}
				// The identity function gives the input back.
				same, err := rd.read(tc.in, func(_ Field, u string) (string, error) { return u, nil })
				if err != nil || string(same) != tc.in {
					t.Errorf("identity: %q, %v", same, err)
				}
			})
		}
	}
}

// A replacement is written as JSON needs, whatever it holds.
func TestReplacementIsEscaped(t *testing.T) {
	repl := "a\"b\\c\n\r\t\x01/\u2028\u2029é<&>" + "\xff"
	got, err := io.ReadAll(New(strings.NewReader(`{"nextUri":"x"}`), func(Field, string) (string, error) { return repl, nil }))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"nextUri":"a\"b\\c\n\r\t\u0001/\u2028\u2029é<&>\ufffd"}`
	if string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	var v struct{ NextURI string }
	if err := json.Unmarshal(got, &v); err != nil || v.NextURI != strings.ToValidUTF8(repl, "\uFFFD") {
		t.Fatalf("decodes to %q, %v", v.NextURI, err)
	}
}

// The function's error stops the stream and is returned, wrapped.
func TestFuncError(t *testing.T) {
	boom := errors.New("boom")
	for _, in := range []string{`{"nextUri":"x"}`, `{"data":{"segments":[{"uri":"u","type":"spooled"}]}}`} {
		_, err := io.ReadAll(New(strings.NewReader(in), func(Field, string) (string, error) { return "", boom }))
		if !errors.Is(err, boom) {
			t.Errorf("%s: got %v, want boom", in, err)
		}
	}
}

// A URI past MaxURI is refused; one of exactly MaxURI passes.
func TestURIBound(t *testing.T) {
	for _, tc := range []struct {
		in     string
		tooBig bool
	}{
		{`{"nextUri":"` + strings.Repeat("a", MaxURI) + `"}`, false},
		{`{"nextUri":"` + strings.Repeat("a", MaxURI+1) + `"}`, true},
		{`{"data":{"segments":[{"type":"spooled","ackUri":"` + strings.Repeat(`\/`, MaxURI/2+1) + `"}]}}`, true},
		// A long string that is not a URI is not held at all.
		{`{"id":"` + strings.Repeat("a", 4*MaxURI) + `","data":[["` + strings.Repeat("b", 4*MaxURI) + `"]]}`, false},
		// Nor is a long key, or a long type.
		{`{"` + strings.Repeat("k", 4*MaxURI) + `":1,"data":{"segments":[{"type":"` + strings.Repeat("t", 4*MaxURI) + `","uri":"u"}]}}`, false},
		// What a segment holds until its type is known is bounded.
		{`{"data":{"segments":[{"uri":"u","metadata":{"x":"` + strings.Repeat("m", MaxSegmentHold) + `"},"type":"spooled"}]}}`, true},
		{`{"data":{"segments":[{"uri":"u","metadata":{"x":"` + strings.Repeat("m", MaxSegmentHold-100) + `"},"type":"spooled"}]}}`, false},
	} {
		for _, rd := range readers[:2] {
			got, err := rd.read(tc.in, func(_ Field, u string) (string, error) { return u, nil })
			if tc.tooBig {
				if !errors.Is(err, ErrTooLong) {
					t.Errorf("%s, %d bytes: got %v, want ErrTooLong", rd.name, len(tc.in), err)
				}
			} else if err != nil || string(got) != tc.in {
				t.Errorf("%s, %d bytes: %v", rd.name, len(tc.in), err)
			}
		}
	}
}

// validBodies are well-formed answers to cut and corrupt.
var validBodies = []string{
	`{"id":"q","infoUri":"http://c/ui?q","nextUri":"http:\/\/c\/v1\u002fx","columns":[{"name":"a","type":"bigint"}],"data":[[1,-2.5e+3,"s\"\\\n",true,false,null,[],{}]],"stats":{"state":"RUNNING","nodes":1}}`,
	`{"data":{"encoding":"json","segments":[{"type":"spooled","uri":"u","ackUri":"a","headers":{"k":["v"]}},{"uri":"u2","type":"spooled"},{"type":"inline","data":"AA=="}]},"nextUri":"n"}`,
	" {\n \"nextUri\" : \"n\" , \"x\" : [ 0 , 1E5 , 0.5 ] } \n",
}

// Every cut of a well-formed answer is an error (io.ErrUnexpectedEOF),
// never a panic or a silently short page.
func TestCutAtEveryPosition(t *testing.T) {
	for _, body := range validBodies {
		end := strings.LastIndexByte(body, '}')
		for cut := 0; cut <= end; cut++ {
			in := body[:cut]
			for _, rd := range readers {
				var rec recorder
				_, err := rd.read(in, rec.fn)
				if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("%s cut at %d (%q): got %v, want unexpected EOF", rd.name, cut, in, err)
				}
			}
		}
	}
}

// Each byte replaced by each of a few troublesome ones: the rewriter
// refuses exactly what encoding/json refuses, and passes the rest
// unchanged with an identity function.
func TestCorruptAtEveryPosition(t *testing.T) {
	identity := func(_ Field, u string) (string, error) { return u, nil }
	for _, body := range validBodies {
		for pos := range len(body) {
			for _, c := range []byte{0, 1, ' ', '"', '\\', ',', ':', '{', '}', '[', ']', '0', '-', 'e', '.', 't', 'u', 0xff} {
				b := []byte(body)
				b[pos] = c
				in := string(b)
				valid := json.Valid(b) && strings.HasPrefix(strings.TrimLeft(in, " \t\r\n"), "{")
				got, err := readers[0].read(in, identity)
				if valid != (err == nil) {
					t.Fatalf("%q: json.Valid %v, rewrite error %v", in, valid, err)
				}
				if valid && string(got) != in {
					t.Fatalf("%q: identity gave %q", in, got)
				}
				var se *SyntaxError
				if err != nil && !errors.As(err, &se) {
					t.Fatalf("%q: error %v is not a *SyntaxError", in, err)
				}
			}
		}
	}
}

func TestMalformed(t *testing.T) {
	for _, in := range []string{
		``, ` `, `[]`, `"nextUri"`, `1`, `null`, `{}}`, `{} {}`, `{}x`,
		`{"a"}`, `{"a" 1}`, `{"a":}`, `{,}`, `{"a":1,}`, `{"a":[1,]}`, `{"a":[,1]}`, `{"a":[}`, `{"a":{]}`,
		`{"a":tru}`, `{"a":nul}`, `{"a":True}`, `{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":1e+}`, `{"a":+1}`,
		"{\"a\":\"\x01\"}", "{\"nextUri\":\"\x1f\"}", `{"a":"\q"}`, `{"nextUri":"\u12g4"}`, `{"nextUri":"\u12"}`,
		`{'a':1}`, `{a:1}`, `{"a":1 "b":2}`, `{"a"::1}`, `{"data":{"segments":[{"type":"spooled","uri":"u"}]}`,
		strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1),
	} {
		if json.Valid([]byte(in)) && strings.HasPrefix(in, "{") {
			t.Fatalf("%q is valid JSON: not a malformed case", in)
		}
		for _, rd := range readers {
			var rec recorder
			_, err := rd.read(in, rec.fn)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("%s %.40q: got %v, want a *SyntaxError", rd.name, in, err)
			}
		}
	}
	// MaxDepth itself is fine, as for encoding/json.
	deep := strings.Repeat(`{"a":`, MaxDepth-1) + "1" + strings.Repeat("}", MaxDepth-1)
	if _, err := io.ReadAll(New(strings.NewReader(deep), nil)); err != nil || !json.Valid([]byte(deep)) {
		t.Errorf("depth %d: %v", MaxDepth, err)
	}
}

// A source's own error comes through after the bytes before it.
func TestSourceError(t *testing.T) {
	boom := errors.New("connection reset")
	src := io.MultiReader(strings.NewReader(`{"nextUri":"n","data":[[1],`), iotest.ErrReader(boom))
	got, err := io.ReadAll(New(src, nil))
	if !errors.Is(err, boom) || string(got) != `{"nextUri":"n","data":[[1],` {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestFirstURI(t *testing.T) {
	for _, tc := range []struct {
		prefix string
		field  Field
		uri    string
		ok     bool
	}{
		{`{"id":"q","infoUri":"https://gw/ui/q","nextUri":"https://gw/_zk/x/v1/statement/q/1","data":[[1,`, InfoURI, "https://gw/ui/q", true},
		{`{"id":"q","nextUri":"https:\/\/gw\/v1"`, NextURI, "https://gw/v1", true},
		{`{"id":"q","columns":[{"name":"nextUri"}],"data":[["nextUri"]],"nextUri":"n"}`, NextURI, "n", true},
		{`{"id":"q","nextUri":"https://gw/v1/stat`, 0, "", false},
		{`{"id":"q"`, 0, "", false},
		{`{"data":{"segments":[{"type":"spooled","uri":"s"`, SegmentURI, "s", true},
		{`{"data":{"segments":[{"uri":"s"`, 0, "", false},
		{`<html>`, 0, "", false},
		{``, 0, "", false},
	} {
		f, u, ok := FirstURI([]byte(tc.prefix))
		if f != tc.field || u != tc.uri || ok != tc.ok {
			t.Errorf("%s: got %v %q %v, want %v %q %v", tc.prefix, f, u, ok, tc.field, tc.uri, tc.ok)
		}
	}
}

func TestFieldString(t *testing.T) {
	for f, want := range map[Field]string{NextURI: "nextUri", PartialCancelURI: "partialCancelUri", InfoURI: "infoUri", SegmentURI: "uri", SegmentAckURI: "ackUri", 0: "Field(0)"} {
		if f.String() != want {
			t.Errorf("%d: %q", int(f), f.String())
		}
	}
}
