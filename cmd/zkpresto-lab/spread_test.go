package main

import (
	"strings"
	"testing"
)

// Bad settings are refused before anything is built or started.
func TestSpreadRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"spread", "--zkpresto", "/nonexistent", "--pools", "-1"}, "clients"},
		{[]string{"spread", "--zkpresto", "/nonexistent", "--duration", "1h"}, "duration"},
		{[]string{"spread-pool", "--dsn", "presto://127.0.0.1:1", "--rate", "0"}, "rate"},
	} {
		if _, _, err := run(tc.args, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}
