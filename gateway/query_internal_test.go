package gateway

import (
	"fmt"
	"testing"
	"time"
)

// The table keeps at most its limit, lets a query go queryAge after the
// last answer that named it, and keeps one named again since over idle
// ones that came after it.
func TestQueryTableBoundsByCountAndAge(t *testing.T) {
	var q queryTable
	q.init(3)
	t0 := time.Unix(1_000_000, 0)
	for i := range 4 {
		q.rememberAt(fmt.Sprint("q", i), "http://c", t0)
	}
	if _, ok := q.byID["q0"]; ok || len(q.byID) != 3 || q.n != 3 {
		t.Fatalf("after 4 queries with a limit of 3: %v (n %d), want q1..q3", q.byID, q.n)
	}

	// Full of queries young enough, the one named again since it came
	// stays over one that was not.
	q.init(3)
	for _, id := range []string{"a", "b", "c"} {
		q.rememberAt(id, "http://c", t0)
	}
	q.rememberAt("a", "http://c", t0.Add(time.Second))
	q.rememberAt("d", "http://c", t0.Add(2*time.Second))
	if _, ok := q.byID["a"]; !ok || len(q.byID) != 3 {
		t.Fatalf("a full table named a again, then took d: %v; want a kept", q.byID)
	}

	q.init(100)
	q.rememberAt("long", "http://c", t0)
	q.rememberAt("idle", "http://c", t0)
	later := t0.Add(queryAge - time.Second)
	q.rememberAt("long", "http://c", later) // its client still polls
	for i := range 4 {
		q.rememberAt(fmt.Sprint("new", i), "http://c", t0.Add(queryAge+time.Second))
	}
	if _, ok := q.byID["idle"]; ok {
		t.Errorf("a query not named for %s is still remembered", queryAge)
	}
	if _, ok := q.byID["long"]; !ok {
		t.Errorf("a query named %s ago was let go", 2*time.Second)
	}
	if len(q.byID) != q.n {
		t.Fatalf("the map holds %d, the ring %d", len(q.byID), q.n)
	}
	// lookup does not route to a query past its age, even before a sweep.
	q.rememberAt("stale", "http://c", time.Now().Add(-queryAge))
	if _, ok := q.lookup("stale"); ok {
		t.Errorf("lookup found a query last named %s ago", queryAge)
	}
}
