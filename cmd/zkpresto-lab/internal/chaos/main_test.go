package chaos_test

import (
	"testing"

	"go.uber.org/goleak"
)

// A run starts clients, fault players, ZooKeeper sessions and HTTP
// connections; none may outlive it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
