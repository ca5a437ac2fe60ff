package chaos

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// submission is one attempt to submit a statement to one coordinator, as
// the wire saw it.
type submission struct {
	addr   string
	status int    // the HTTP status; 0 when the transport failed
	err    string // the transport error, if any
	at     time.Time
}

// recorder is the HTTP transport under the driver's routing transport: the
// requests it sees already name the coordinator picked for them. It
// records, per statement text, every submission and its outcome, which
// tells exactly which statements failed over and why, without any hook in
// the driver. It is safe for concurrent use.
type recorder struct {
	next http.RoundTripper

	mu    sync.Mutex
	bySQL map[string][]submission
}

func newRecorder(next http.RoundTripper) *recorder {
	return &recorder{next: next, bySQL: map[string][]submission{}}
}

// RoundTrip implements http.RoundTripper.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isSubmission(req) {
		return r.next.RoundTrip(req)
	}
	text, req, err := statementText(req)
	if err != nil {
		return nil, err
	}
	resp, err := r.next.RoundTrip(req)
	s := submission{addr: req.URL.Host, at: time.Now()}
	if err != nil {
		s.err = err.Error()
	} else {
		s.status = resp.StatusCode
	}
	r.mu.Lock()
	r.bySQL[text] = append(r.bySQL[text], s)
	r.mu.Unlock()
	return resp, err
}

// submissions returns the recorded submissions of text.
func (r *recorder) submissions(text string) []submission {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]submission(nil), r.bySQL[text]...)
}

func isSubmission(req *http.Request) bool {
	return (req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/v1/statement")) ||
		(req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/v1/statement/"))
}

// statementText reads the statement from req's body without consuming the
// body the request will send: through GetBody when the request has it,
// otherwise by buffering the body into a copy of the request.
func statementText(req *http.Request) (string, *http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return "", req, nil
	}
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err == nil {
			defer body.Close()
			data, err := io.ReadAll(body)
			if err == nil {
				return string(data), req, nil
			}
		}
	}
	data, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return "", nil, err
	}
	clone := req.Clone(req.Context())
	clone.Body = io.NopCloser(bytes.NewReader(data))
	clone.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	return string(data), clone, nil
}
