package testutil_test

import (
	"fmt"
	"strings"

	"github.com/zkpresto/zkpresto/internal/testrig/testutil"
)

func ExampleBuffer() {
	var logs testutil.Buffer
	logs.Logger().Debug("coordinator ejected", "addr", "127.0.0.1:8080")
	// Each record starts with its time; the rest is fixed.
	_, record, _ := strings.Cut(logs.String(), " ")
	fmt.Print(record)
	// Output: level=DEBUG msg="coordinator ejected" addr=127.0.0.1:8080
}
