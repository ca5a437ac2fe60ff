package loadsim_test

import (
	"testing"

	"go.uber.org/goleak"
)

// RunAll runs simulations on goroutines; none may outlive it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
