package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Answer is what zkpresto reads of a statement resource's answer (the
// protocol's QueryResults: the answer to a submission and every page
// after it): the query's ids, where its next page is, its state and, for
// a failed query, its error, and whether it carries rows. The rows,
// columns and the rest of the stats are not kept. It is decoded once per
// page, by DecodeAnswer, and the rules that read an answer (NeverRan, the
// routing's verdict on an attempt) take their facts from it.
type Answer struct {
	// ID is the query's id; empty in an answer that is not a query's.
	ID string `json:"id"`
	// InfoURI is the query's page on the coordinator's web UI.
	InfoURI string `json:"infoUri"`
	// NextURI is the URI of the query's next page; empty once the query
	// ended (finished or failed).
	NextURI string `json:"nextUri"`
	// Stats holds the query's state (QUEUED, RUNNING, FINISHED,
	// FAILED...).
	Stats struct {
		State string `json:"state"`
	} `json:"stats"`
	// Error is the query's failure; nil unless the query failed.
	Error *AnswerError `json:"error"`
	// Data is whether the answer carries rows (HasRows).
	Data rowsPresence `json:"data"`
}

// rowsPresence is whether an answer's data holds rows, decoded without
// keeping them.
type rowsPresence bool

// UnmarshalJSON sets p for data, a valid JSON value (the decoder checked
// it): neither null nor an empty array.
func (p *rowsPresence) UnmarshalJSON(data []byte) error {
	v := bytes.TrimSpace(data)
	empty := string(v) == "null" || (len(v) >= 2 && v[0] == '[' && len(bytes.TrimSpace(v[1:len(v)-1])) == 0)
	*p = rowsPresence(!empty)
	return nil
}

// AnswerError is a failed query's error as an answer carries it.
type AnswerError struct {
	// Message is the server's message.
	Message string `json:"message"`
	// ErrorCode is the error's number (the server's ErrorCode.code).
	ErrorCode int `json:"errorCode"`
	// ErrorName is the error's name, such as SYNTAX_ERROR or
	// SERVER_STARTING_UP.
	ErrorName string `json:"errorName"`
	// ErrorType is its kind: USER_ERROR, INTERNAL_ERROR,
	// INSUFFICIENT_RESOURCES or EXTERNAL.
	ErrorType string `json:"errorType"`
}

// DecodeAnswer decodes page, a statement resource's answer, whole. A
// page that is not a JSON object is an error naming what was wrong; the
// members Answer does not keep are checked for their syntax only.
func DecodeAnswer(page []byte) (Answer, error) {
	var a Answer
	if err := json.Unmarshal(page, &a); err != nil {
		return Answer{}, fmt.Errorf("decoding a statement answer: %w", err)
	}
	return a, nil
}

// ErrorName is the name of the answer's error, empty when the query did
// not fail.
func (a *Answer) ErrorName() string {
	if a.Error == nil {
		return ""
	}
	return a.Error.ErrorName
}

// HasRows reports whether the answer carries rows: its data is a
// non-empty array, or the spooling protocol's segments.
func (a *Answer) HasRows() bool { return bool(a.Data) }

// Ended reports whether the answer is the query's last: it names no next
// page.
func (a *Answer) Ended() bool { return a.NextURI == "" }
