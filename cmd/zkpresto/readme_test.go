package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/strategy"
)

// numberWords reads the counts the README spells out.
var numberWords = map[string]int{
	"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
	"eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
}

// Every "N strategies" in the README, in words or figures, is the number
// of built-in strategies (nothing in this package registers its own).
func TestREADMEStrategyCount(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := len(strategy.Names())
	found := 0
	for _, m := range regexp.MustCompile(`(?i)\b([a-z]+|[0-9]+)\s+(?:built-in\s+)?strategies\b`).FindAllStringSubmatch(string(b), -1) {
		n, ok := numberWords[strings.ToLower(m[1])]
		if !ok {
			if n, err = strconv.Atoi(m[1]); err != nil {
				continue // "several strategies", "the strategies"
			}
		}
		found++
		if n != want {
			t.Errorf("README says %q; strategy.Names() has %d: %v", m[0], want, strategy.Names())
		}
	}
	if found == 0 {
		t.Error("README no longer states how many strategies there are; drop this test or say it again")
	}
}
