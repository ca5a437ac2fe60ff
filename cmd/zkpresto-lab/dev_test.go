package main

import (
	"strings"
	"testing"
)

func TestDevRejectsBadFlags(t *testing.T) {
	_, _, err := run([]string{"dev", "--coordinators", "0"}, "")
	if err == nil || !strings.Contains(err.Error(), "--coordinators 0") {
		t.Fatalf("got %v", err)
	}
}
