package gateway

import (
	"encoding/json"
	"io"
	"net/http"
)

// prestoError is the body of an error answer, shaped like a coordinator's
// failed query so that every client shows its message.
type prestoError struct {
	ID      string      `json:"id"`
	InfoURI string      `json:"infoUri,omitempty"`
	Stats   errorStats  `json:"stats"`
	Error   errorDetail `json:"error"`
}

type errorStats struct {
	State string `json:"state"`
}

type errorDetail struct {
	Message     string      `json:"message"`
	ErrorCode   int         `json:"errorCode"`
	ErrorName   string      `json:"errorName"`
	ErrorType   string      `json:"errorType"`
	FailureInfo failureInfo `json:"failureInfo"`
}

type failureInfo struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// Error names, after Presto's own where one fits.
const (
	errGatewayName      = "ZKPRESTO_GATEWAY"
	errNoCoordinator    = "NO_NODES_AVAILABLE"
	errCoordinatorGone  = "ZKPRESTO_COORDINATOR_GONE"
	errBadToken         = "ZKPRESTO_BAD_ROUTING_TOKEN"
	errQueryNotFound    = "ZKPRESTO_QUERY_NOT_FOUND"
	errStatementFailure = "ZKPRESTO_COORDINATOR_FAILED"
)

// writeError answers status with a Presto error body.
func writeError(w http.ResponseWriter, status int, name, queryID, message string) {
	body := prestoError{
		ID:    queryID,
		Stats: errorStats{State: "FAILED"},
		Error: errorDetail{
			Message:     message,
			ErrorCode:   65536 + status, // in Presto's external error range
			ErrorName:   name,
			ErrorType:   "EXTERNAL",
			FailureInfo: failureInfo{Type: "com.zkpresto.gateway." + name, Message: message},
		},
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// decodeHead decodes a bounded JSON answer into v.
func decodeHead(r io.Reader, v any) error {
	return json.NewDecoder(io.LimitReader(r, 1<<20)).Decode(v)
}
