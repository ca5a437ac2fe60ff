package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Limits of one /v1/info probe.
const (
	// MaxInfoBytes bounds how much of a /v1/info answer is read. Presto's
	// answer is a few hundred bytes; anything near this limit is not one,
	// and an unbounded read would let a misbehaving server exhaust memory.
	MaxInfoBytes = 64 << 10
	// DefaultTimeout bounds a probe whose context has no deadline, so that
	// a server that accepts the connection and never answers cannot hang
	// its caller.
	DefaultTimeout = 10 * time.Second
	// maxDrainBytes is how much of an unread answer is discarded before the
	// body is closed: enough for the connection to be reused after any
	// plausible answer, little enough that a huge one is cut off instead.
	maxDrainBytes = 64 << 10
	infoPath      = "/v1/info"
)

// Verdict is what a coordinator's GET /v1/info says about it. The zero value
// is Down, so an Info that was never filled in never passes for a ready
// coordinator.
type Verdict int

// The verdicts, from worst to best.
const (
	// Down means the coordinator cannot be used: no answer, an error, or an
	// answer that is not Presto's /v1/info.
	Down Verdict = iota
	// Starting means the coordinator answered and says it is not ready yet
	// ("starting": true); it will refuse statements until it is.
	Starting
	// Up means the coordinator answered and says it is ready.
	Up
)

// String returns "down", "starting" or "up", the words the CLI prints.
func (v Verdict) String() string {
	switch v {
	case Down:
		return "down"
	case Starting:
		return "starting"
	case Up:
		return "up"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// ErrStarting is wrapped by Info.Err when the coordinator reports that it is
// starting, so callers can tell "not ready yet" from a failure.
var ErrStarting = errors.New("coordinator reports it is starting")

// Info is the result of one probe.
type Info struct {
	// Verdict is the coordinator's readiness.
	Verdict Verdict
	// Version is nodeVersion.version from the answer; empty when Down or
	// when the coordinator did not say.
	Version string
	// Environment is the coordinator's "environment"; empty when Down.
	Environment string
	// Coordinator is the answer's "coordinator" flag. It is reported, not
	// judged: whether a worker may stand in is the caller's policy.
	Coordinator bool
	// Err says why the verdict is not Up; nil when it is. It names the URL
	// (without credentials or query) and what was wrong.
	Err error
}

// infoAnswer is the part of Presto's (and Trino's) ServerInfo that the probe
// reads. Pointers tell a missing field from a zero one.
type infoAnswer struct {
	NodeVersion *struct {
		Version string `json:"version"`
	} `json:"nodeVersion"`
	Environment string `json:"environment"`
	Coordinator bool   `json:"coordinator"`
	Starting    *bool  `json:"starting"`
}

// ProbeInfo asks the coordinator at baseURL (http(s)://host:port, a trailing
// slash and path prefix allowed) for GET /v1/info and returns its verdict.
// The rules are the same for every caller:
//
//   - 200 with a JSON object whose "starting" is false is Up, and true is
//     Starting. A Presto server always sends "starting"; an object without
//     it is Up only if it carries nodeVersion.version (a server that names
//     its version and does not say it is starting is serving), and Down
//     otherwise (a generic "OK" page from something that is not Presto).
//   - Any other status is Down. Redirects are not followed, whatever the
//     client's CheckRedirect says: Presto's /v1/info never redirects, so a
//     redirect is a proxy or login page in the way, and the probe must judge
//     the address clients are given, not wherever it is bounced.
//   - A body that is not one JSON object (an HTML page from a proxy, a
//     truncated or oversized answer, a field of the wrong type) is Down.
//   - A transport error, or no complete answer before ctx's deadline
//     (DefaultTimeout when ctx has none), is Down.
//
// At most MaxInfoBytes of the answer are read, with Accept: application/json.
// The rest is drained up to a bound before the body is closed, so that the
// client's keep-alive connection is reused by the next probe. client may be
// nil for http.DefaultClient; it is not modified.
func ProbeInfo(ctx context.Context, client *http.Client, baseURL string) Info {
	u, err := infoURL(baseURL)
	if err != nil {
		return Info{Err: err}
	}
	shown := redact(u)
	down := func(format string, args ...any) Info {
		return Info{Err: fmt.Errorf("GET %s: %w", shown, fmt.Errorf(format, args...))}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return down("%w", err)
	}
	req.Header.Set("Accept", "application/json")

	if client == nil {
		client = http.DefaultClient
	}
	noRedirects := *client // a shallow copy: the caller's client may be shared
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirects.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // its URL is already in our message
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return down("no answer before the deadline: %w", err)
		}
		return down("%w", err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrainBytes))
		_ = resp.Body.Close()
	}()

	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		to := "no Location"
		if loc, err := resp.Location(); err == nil {
			to = redact(loc)
		}
		return down("redirected (%s) to %s; a probe does not follow redirects", resp.Status, to)
	}
	if resp.StatusCode != http.StatusOK {
		return down("status %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxInfoBytes+1))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return down("answer not complete before the deadline: %w", err)
		}
		return down("reading the answer: %w", err)
	}
	if len(body) > MaxInfoBytes {
		return down("answer larger than %d KiB: not a Presto /v1/info answer", MaxInfoBytes>>10)
	}
	if trimmed := bytes.TrimLeft(body, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return down("not a Presto /v1/info answer: not a JSON object (Content-Type %q)", resp.Header.Get("Content-Type"))
	}
	var a infoAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return down("not a Presto /v1/info answer: %w", err)
	}
	info := Info{Environment: a.Environment, Coordinator: a.Coordinator}
	if a.NodeVersion != nil {
		info.Version = a.NodeVersion.Version
	}
	switch {
	case a.Starting == nil && info.Version == "":
		return down(`not a Presto /v1/info answer: neither "starting" nor nodeVersion.version`)
	case a.Starting != nil && *a.Starting:
		info.Verdict = Starting
		info.Err = fmt.Errorf("GET %s: %w", shown, ErrStarting)
	default:
		info.Verdict = Up
	}
	return info
}

// infoURL returns baseURL's /v1/info URL. Only http and https are probed: a
// base URL with another scheme is a configuration mistake, not a node that
// is down for a moment.
func infoURL(baseURL string) (*url.URL, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		// url.Parse's error repeats the input, which may hold a password.
		return nil, errors.New("probe /v1/info: the coordinator URL does not parse")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("probe /v1/info: coordinator URL %s: want http(s)://host:port", redact(u))
	}
	u.Path = strings.TrimRight(u.Path, "/") + infoPath
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u, nil
}

// redact returns u for an error message: without user information, query or
// fragment, which are where URLs carry secrets (passwords, tokens, login
// state).
func redact(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}

// AirliftDuration formats d as Presto and Trino write a duration on the
// wire (io.airlift.units.Duration.toString: the largest unit in which the
// value is at least one, with two decimals), so that clients that parse
// /v1/info's uptime, trino-go-client's ServerInfo among them, can read it:
// 235 s is "3.92m", never Go's "3m55s".
func AirliftDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	units := [...]struct {
		name string
		size time.Duration
	}{
		{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second},
		{"ms", time.Millisecond}, {"us", time.Microsecond},
	}
	for _, u := range units {
		// Airlift takes a unit once the value in it exceeds 0.9999: units
		// are powers of ten apart, so it allows for rounding.
		if v := float64(d) / float64(u.size); v > 0.9999 {
			return strconv.FormatFloat(v, 'f', 2, 64) + u.name
		}
	}
	return strconv.FormatFloat(float64(d), 'f', 2, 64) + "ns"
}
