package registrar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// leavingStates are the node states (GET /v1/info/state) of a coordinator
// that takes no more work: one shutting down gracefully (PrestoDB's
// GracefulShutdownHandler.requestShutdown, Trino's
// NodeStateManager.transitionState) keeps answering /v1/info with
// "starting": false until it stops, so only its state tells. DRAINING and
// DRAINED are Trino's (NodeStateManager), for a node about to be stopped.
var leavingStates = map[string]bool{"SHUTTING_DOWN": true, "DRAINING": true, "DRAINED": true}

// maxStateBytes bounds a /v1/info/state answer, a JSON string of a few
// bytes.
const maxStateBytes = 4 << 10

// errLeaving is wrapped by the error of a coordinator whose state says it
// takes no more work.
var errLeaving = errors.New("coordinator is leaving")

// leaving reads the coordinator's node state and returns it with an error
// naming it when the coordinator is shutting down or draining. Any other answer,
// a failure to read it included, is not the registrar's concern: a server
// without the resource (an older one, a proxy that does not pass it) is
// judged by /v1/info alone, as before.
func (r *Registrar) leaving(ctx context.Context) (string, error) {
	u, err := url.Parse(r.infoURL + "/state")
	if err != nil {
		return "", nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", nil
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		return "", nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStateBytes))
	if err != nil || resp.StatusCode != http.StatusOK {
		return "", nil
	}
	var state string
	if json.Unmarshal(body, &state) != nil || !leavingStates[state] {
		return "", nil
	}
	u.User = nil // an error never carries credentials
	return state, fmt.Errorf("GET %s: %w: its state is %s", u, errLeaving, state)
}
