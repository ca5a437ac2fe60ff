package wire

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// CancelTimeout bounds the DELETE that cancels an abandoned query.
const CancelTimeout = 2 * time.Second

// CancelQuery asks the coordinator to cancel the query whose latest
// follow-up URL is u (a DELETE on it, as the Presto clients do), bounded by
// CancelTimeout. Best effort: a coordinator also abandons queries nobody
// polls. header, when not nil, is sent with the DELETE: an authenticating
// coordinator checks every request, the cancel as much as the statement's
// (the caller decides which of the statement's credentials may go again;
// never a Negotiate token, good for one request). A redirect is not
// followed: client's own policy would send header's Authorization on to
// the same host on another port or scheme, or to a subdomain, a host other
// than the statement's coordinator.
func CancelQuery(ctx context.Context, client *http.Client, u *url.URL, header http.Header) error {
	ctx, cancel := context.WithTimeout(ctx, CancelTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u.String(), nil)
	if err != nil {
		return fmt.Errorf("cancelling query at %s: %w", u.Redacted(), err)
	}
	for name, values := range header {
		req.Header[name] = values
	}
	// The answer is thrown away: not worth a gzip reader.
	req.Header.Set("Accept-Encoding", "identity")
	noRedirects := *client
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirects.Do(req)
	if err != nil {
		return err // *url.Error names the URL
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	return nil
}
