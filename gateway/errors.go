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

// failureInfo is an error's failureInfo as the servers write it. The Java
// clients (trino-cli, presto-cli, both JDBC drivers) refuse a failureInfo
// without suppressed and stack: the whole page then fails to decode, and
// they print it raw ("returned an invalid response") or, trino-cli for the
// first page of a statement, "Query is gone (server restarted?)".
type failureInfo struct {
	Type       string        `json:"type"`
	Message    string        `json:"message"`
	Suppressed []failureInfo `json:"suppressed"`
	Stack      []string      `json:"stack"`
}

// gatewayFailureInfo is the failureInfo of the gateway's failure name, with
// the empty lists the Java clients require.
func gatewayFailureInfo(name, message string) failureInfo {
	return failureInfo{Type: "com.zkpresto.gateway." + name, Message: message, Suppressed: []failureInfo{}, Stack: []string{}}
}

// Error names, after Presto's own where one fits.
const (
	errGatewayName      = "ZKPRESTO_GATEWAY"
	errNoCoordinator    = "NO_NODES_AVAILABLE"
	errCoordinatorGone  = "ZKPRESTO_COORDINATOR_GONE"
	errBadToken         = "ZKPRESTO_BAD_ROUTING_TOKEN"
	errQueryNotFound    = "ZKPRESTO_QUERY_NOT_FOUND"
	errStatementFailure = "ZKPRESTO_COORDINATOR_FAILED"
	errRouting          = "ZKPRESTO_ROUTING_GROUP"
)

// writeError answers status with a Presto error body.
func writeError(w http.ResponseWriter, status int, name, queryID, message string) {
	body := prestoError{
		ID:    queryID,
		Stats: errorStats{State: "FAILED"},
		Error: gatewayErrorDetail(status, name, message),
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// gatewayErrorDetail is the error of one of the gateway's own failures,
// status being the HTTP status it stands for.
func gatewayErrorDetail(status int, name, message string) errorDetail {
	return errorDetail{
		Message:     message,
		ErrorCode:   65536 + status, // in Presto's external error range
		ErrorName:   name,
		ErrorType:   "EXTERNAL",
		FailureInfo: gatewayFailureInfo(name, message),
	}
}

// writeFailedPage answers a statement's GET with its query's last page,
// FAILED with detail, as a coordinator ends a failed query: every client
// shows such a page as the query's failure, with its name and message,
// where an error status is shown by none so (JDBC prints the response,
// trino-client for npm only the status, presto-go-client the raw body).
// A page with no nextUri ends the query: no client sends it again.
func writeFailedPage(w http.ResponseWriter, queryID, infoURI string, detail errorDetail) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(prestoError{
		ID:      queryID,
		InfoURI: infoURI,
		Stats:   errorStats{State: "FAILED"},
		Error:   detail,
	})
}

// decodeHead decodes a bounded JSON answer into v.
func decodeHead(r io.Reader, v any) error {
	return json.NewDecoder(io.LimitReader(r, 1<<20)).Decode(v)
}
