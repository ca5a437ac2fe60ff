package driver

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"testing"
)

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestRelabelPageKeepsOtherPagesAsTheyCame(t *testing.T) {
	plain := []byte(`{"id":"q","columns":[{"name":"n","type":"bigint","typeSignature":{"rawType":"bigint"}}],"data":[[1]],"stats":{}}`)
	for _, compressed := range []bool{false, true} {
		body := plain
		h := http.Header{}
		if compressed {
			body = gz(plain)
			h.Set("Content-Encoding", "gzip")
		}
		resp := &http.Response{Header: h, Body: io.NopCloser(bytes.NewReader(body))}
		relabelPage(resp, &attempt{})
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(got, body) || resp.Header.Get("Content-Encoding") != h.Get("Content-Encoding") {
			t.Errorf("gzip %t: %v %q", compressed, err, got)
		}
	}
}

func TestRelabelPageRelabels(t *testing.T) {
	page := []byte(`{"id":"q","columns":[{"name":"n","type":"bigint","typeSignature":{"rawType":"bigint"}},{"name":"ts","type":"timestamp with time zone","typeSignature":{"rawType":"timestamp with time zone"}}],"data":[[1,"2024-05-06 07:08:09.123 Europe/Paris"]],"stats":{}}`)
	for _, compressed := range []bool{false, true} {
		body := page
		h := http.Header{}
		if compressed {
			body = gz(page)
			h.Set("Content-Encoding", "gzip")
		}
		a := &attempt{}
		resp := &http.Response{Header: h, Body: io.NopCloser(bytes.NewReader(body))}
		relabelPage(resp, a)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.Header.Get("Content-Encoding") != "" || !bytes.Contains(got, []byte(`"type":"varchar"`)) || !bytes.Contains(got, []byte("Europe/Paris")) {
			t.Errorf("gzip %t: %v %s", compressed, err, got)
		}
		if cols := a.tstz.Load(); cols == nil || cols.types[1] != "timestamp with time zone" || cols.types[0] != "" {
			t.Errorf("gzip %t: columns %+v", compressed, cols)
		}
	}
}

type chunky struct{ b []byte }

func (c *chunky) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 7)], c.b)
	c.b = c.b[n:]
	if len(c.b) == 0 {
		return n, io.EOF
	}
	return n, nil
}

func TestRelabelPageChunky(t *testing.T) {
	plain := bytes.Repeat([]byte(`{"id":"q","nextUri":"x","stats":{"a":1}}`), 1)
	body := gz(plain)
	h := http.Header{}
	h.Set("Content-Encoding", "gzip")
	resp := &http.Response{Header: h, Body: io.NopCloser(&chunky{bytes.Clone(body)})}
	relabelPage(resp, &attempt{})
	got, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("%v\n%x\n%x", err, got, body)
	}
}
