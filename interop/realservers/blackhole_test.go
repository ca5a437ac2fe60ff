package realservers

import (
	"fmt"
	"testing"

	"github.com/zkpresto/zkpresto/zkprestotest/realserver"
)

// slowTable makes, on s, a blackhole table whose scan takes about seconds
// seconds: one split of that many pages of a row, each delayed a second
// (blackhole's page_processing_delay sleeps before each page: trino
// plugin/blackhole BlackHolePageSource; PrestoDB presto-blackhole
// BlackHolePageSourceProvider).
func slowTable(t *testing.T, s *realserver.Server, seconds int) string {
	t.Helper()
	name := fmt.Sprintf("blackhole.default.zk_slow_%d", seconds)
	if _, err := s.Query(ctx(t), fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (x bigint)
		WITH (split_count = 1, pages_per_split = %d, rows_per_page = 1, page_processing_delay = '1s')`, name, seconds)); err != nil {
		t.Fatalf("creating %s on %s: %v", name, s.Name(), err)
	}
	return name
}
