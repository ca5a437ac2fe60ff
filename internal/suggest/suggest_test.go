package suggest

import (
	"fmt"
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	long := strings.Repeat("a", 100)
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"usr", "user", 1},
		{"user", "usr", 1},
		{"targetgroup", "targetGroup", 1},
		{"kitten", "sitting", 3},
		{"", "abc", 3},
		{long, long + "b", 1},
		{long + "b", long, 1},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestNearest(t *testing.T) {
	if got, d := Nearest("usr", []string{"source", "user", "clientTags", "targetGroup"}); got != "user" || d != 1 {
		t.Errorf("Nearest(usr) = %q, %d", got, d)
	}
	if got, d := Nearest("x", nil); got != "" || d != -1 {
		t.Errorf("Nearest in nothing = %q, %d", got, d)
	}
}

func ExampleNearest() {
	name, _ := Nearest("targetGrop", []string{"user", "source", "clientTags", "targetGroup"})
	fmt.Println(name)
	// Output: targetGroup
}

func TestDistanceOfShortNamesAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { Distance("zooKeeperNamespace", "zookeepernamespce") }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
