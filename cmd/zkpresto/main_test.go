package main

import (
	"strings"
	"testing"
)

func TestVersionPrintsName(t *testing.T) {
	out, _, err := run([]string{"version"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "zkpresto ") {
		t.Fatalf("version printed %q", out)
	}
}
