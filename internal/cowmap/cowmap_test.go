package cowmap

import (
	"fmt"
	"sync"
	"testing"
)

func TestGetOrCreateKeepsOneValuePerKey(t *testing.T) {
	var m Map[*int]
	var wg sync.WaitGroup
	got := make([]*int, 8)
	for i := range got {
		wg.Go(func() { got[i] = m.GetOrCreate("a", func() *int { return new(int) }) })
	}
	wg.Wait()
	for _, p := range got {
		if p != got[0] {
			t.Fatal("two values were created for one key")
		}
	}
	both := m.GetOrCreateAll([]string{"a", "b"}, func() *int { return new(int) })
	if both[0] != got[0] || both[1] == nil || len(m.All()) != 2 {
		t.Fatalf("GetOrCreateAll gave %v, map %v", both, m.All())
	}
	before := m.All()
	m.Retain(func(k string) bool { return k == "b" })
	if _, ok := m.Get("a"); ok || len(m.All()) != 1 || len(before) != 2 {
		t.Fatalf("after Retain: %v (the earlier view must stay whole: %v)", m.All(), before)
	}
}

func ExampleMap() {
	var loads Map[*int]
	n := loads.GetOrCreate("10.0.0.1:8080", func() *int { return new(int) })
	*n = 3
	v, _ := loads.Get("10.0.0.1:8080")
	fmt.Println(*v, len(loads.All()))
	// Output: 3 1
}
