package realserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// Info is what /v1/info says.
type Info struct {
	NodeVersion struct {
		Version string `json:"version"`
	} `json:"nodeVersion"`
	Environment string `json:"environment"`
	Coordinator bool   `json:"coordinator"`
	Starting    bool   `json:"starting"`
}

func (s *Server) info(ctx context.Context, client *http.Client) (Info, error) {
	var info Info
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/v1/info", nil)
	if err != nil {
		return info, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return info, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return info, fmt.Errorf("/v1/info: HTTP %d", resp.StatusCode)
	}
	err = json.NewDecoder(resp.Body).Decode(&info)
	return info, err
}

// Info reads the server's /v1/info.
func (s *Server) Info(ctx context.Context) (Info, error) {
	return s.info(ctx, http.DefaultClient)
}

// QueryError is a statement's failure as the server reported it.
type QueryError struct {
	Name    string // errorName, e.g. SYNTAX_ERROR
	Code    int    // errorCode
	Type    string // errorType, e.g. USER_ERROR
	Message string
}

func (e *QueryError) Error() string { return e.Name + ": " + e.Message }

// Result is a finished statement's columns and rows, as JSON values.
type Result struct {
	ID      string
	Columns []string
	Rows    [][]any
	// Header holds the headers of every answer of the statement, in
	// order (X-Trino-Started-Transaction-Id, X-Presto-Set-Session, ...).
	Header http.Header
}

type page struct {
	ID      string `json:"id"`
	NextURI string `json:"nextUri"`
	Columns []struct {
		Name string `json:"name"`
	} `json:"columns"`
	Data  [][]any `json:"data"`
	Error *struct {
		ErrorName string `json:"errorName"`
		ErrorCode int    `json:"errorCode"`
		ErrorType string `json:"errorType"`
		Message   string `json:"message"`
	} `json:"error"`
}

// Query runs a statement as user "test" straight on the server, with the
// extra headers given as name, value pairs ("X-Trino-Session", "k=v"), and
// returns its rows. It is the test kit's own check of the server, apart
// from the clients under test. On a server with Options.Passwords it runs
// over https as the first user (in name order), with that user's password;
// with Options.JWT over https as its User, with its Token.
func (s *Server) Query(ctx context.Context, sql string, headers ...string) (*Result, error) {
	if s.check != nil {
		return s.check.query(ctx, s.HTTPSURL(), s.flavour, sql, headers...)
	}
	return QueryAt(ctx, s.URL(), s.flavour, sql, headers...)
}

// QueryAt is Server.Query against any coordinator at baseURL, of the
// flavour given (the simulator, for the differential tests).
func QueryAt(ctx context.Context, baseURL string, flavour coordinator.Flavour, sql string, headers ...string) (*Result, error) {
	return (&checker{client: http.DefaultClient, user: "test"}).query(ctx, baseURL, flavour, sql, headers...)
}

// QueryWith runs sql at baseURL over client as user (no user header when
// empty), with header on every request of the statement, the pages' too:
// for a test's own client (a client certificate, a token of its own).
func QueryWith(ctx context.Context, client *http.Client, baseURL string, flavour coordinator.Flavour, user, sql string, header http.Header) (*Result, error) {
	return (&checker{client: client, user: user, header: header}).query(ctx, baseURL, flavour, sql)
}

// checker is who the kit's own statements run as, and over which client.
type checker struct {
	client         *http.Client
	user, password string
	token          string      // a bearer token, sent instead of a password
	header         http.Header // sent on every request; nil for none
}

// authenticate adds the checker's credentials to req.
func (c *checker) authenticate(req *http.Request) {
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	switch {
	case c.password != "":
		req.SetBasicAuth(c.user, c.password)
	case c.token != "":
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

func (c *checker) query(ctx context.Context, baseURL string, flavour coordinator.Flavour, sql string, headers ...string) (*Result, error) {
	prefix := flavour.HeaderPrefix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/v1/statement", strings.NewReader(sql))
	if err != nil {
		return nil, err
	}
	if c.user != "" {
		req.Header.Set(prefix+"User", c.user)
	}
	c.authenticate(req)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	res := &Result{Header: http.Header{}}
	for {
		p, header, err := c.do(req)
		if err != nil {
			return nil, err
		}
		for k, vs := range header {
			res.Header[k] = append(res.Header[k], vs...)
		}
		res.ID = p.ID
		if res.Columns == nil && p.Columns != nil {
			for _, c := range p.Columns {
				res.Columns = append(res.Columns, c.Name)
			}
		}
		res.Rows = append(res.Rows, p.Data...)
		if p.Error != nil {
			return res, &QueryError{Name: p.Error.ErrorName, Code: p.Error.ErrorCode, Type: p.Error.ErrorType, Message: p.Error.Message}
		}
		if p.NextURI == "" {
			return res, nil
		}
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, p.NextURI, nil); err != nil {
			return nil, err
		}
		// Every request is authenticated, the pages' too.
		c.authenticate(req)
	}
}

func (c *checker) do(req *http.Request) (*page, http.Header, error) {
	for attempt := 0; ; attempt++ {
		resp, err := c.client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		if err != nil {
			return nil, nil, err
		}
		// 503 is the protocol's "ask again" (a busy coordinator).
		if resp.StatusCode == http.StatusServiceUnavailable && attempt < 20 && req.Method == http.MethodGet {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			return nil, nil, fmt.Errorf("%s %s: HTTP %d: %.200s", req.Method, req.URL.Path, resp.StatusCode, body)
		}
		var p page
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
		}
		return &p, resp.Header, nil
	}
}

// Shutdown asks the server to shut down gracefully, as operators do: PUT
// /v1/info/state "SHUTTING_DOWN". The server then finishes its queries,
// refuses new ones and exits (Trino's coordinator refuses the request).
func (s *Server) Shutdown(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, s.URL()+"/v1/info/state", strings.NewReader(`"SHUTTING_DOWN"`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(s.flavour.HeaderPrefix()+"User", "test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("realserver: %s: shutdown: %w", s.name, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("realserver: %s: shutdown: HTTP %d: %.200s", s.name, resp.StatusCode, body)
	}
	return nil
}

// QueryInfo is what a server's GET /v1/query says of one query.
type QueryInfo struct {
	QueryID string `json:"queryId"`
	State   string `json:"state"`
	Query   string `json:"query"`
	Session struct {
		Source string `json:"source"`
	} `json:"session"`
	// ErrorCode is set for a failed query.
	ErrorCode *struct {
		Name string `json:"name"`
	} `json:"errorCode"`
}

// Queries lists the queries the server knows, as GET /v1/query does
// (trino QueryResource.getAllQueryInfo; prestodb the same): queued ones
// too, which PrestoDB's system.runtime.queries leaves out, and each
// failure's error name, which that table lacks there. A server keeps a
// query for query.min-expire-age (15 minutes) after it ends.
func (s *Server) Queries(ctx context.Context) ([]QueryInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/v1/query", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(s.flavour.HeaderPrefix()+"User", "test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("realserver: %s: GET /v1/query: %w", s.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("realserver: %s: GET /v1/query: %s", s.name, resp.Status)
	}
	var qs []QueryInfo
	if err := json.NewDecoder(resp.Body).Decode(&qs); err != nil {
		return nil, fmt.Errorf("realserver: %s: GET /v1/query: %w", s.name, err)
	}
	return qs, nil
}
