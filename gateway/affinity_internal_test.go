package gateway

import (
	"net/http"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/internal/gateway/token"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/strategy"
)

// The affinity cookies are taken out of the header sent on to the
// coordinator, and the client's other cookies go on as they came.
func TestTakeCookie(t *testing.T) {
	for _, tc := range []struct {
		in     []string
		values []string
		left   []string
	}{
		{nil, nil, nil},
		{[]string{"a=1; b=2"}, nil, []string{"a=1; b=2"}},
		{[]string{"zkpresto_affinity=v1"}, []string{"v1"}, nil},
		{[]string{"a=1; zkpresto_affinity=v1; b=2", "zkpresto_affinity=\"v2\"", "c=3"}, []string{"v1", "v2"}, []string{"a=1; b=2", "c=3"}},
		{[]string{"zkpresto_affinity_other=x"}, nil, []string{"zkpresto_affinity_other=x"}},
	} {
		h := http.Header{}
		if tc.in != nil {
			h["Cookie"] = append([]string(nil), tc.in...)
		}
		values := takeCookie(h)
		if !equal(values, tc.values) || !equal(h["Cookie"], tc.left) {
			t.Errorf("takeCookie(%q): values %q, left %q; want %q, %q", tc.in, values, h["Cookie"], tc.values, tc.left)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A cookie verifies on a replica of the same secret until it expires, for
// its group only; other purposes' tokens, another secret's cookies and
// payloads it never signs do not.
func TestAffinityVerify(t *testing.T) {
	keys, err := token.ParseKeys("k1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	a, err := newAffinity(keys, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a.now = func() time.Time { return now }
	v, err := a.sign("10.0.0.7:8080", "etl nightly")
	if err != nil {
		t.Fatal(err)
	}
	if addr, group, outcome := a.verify(v); addr != "10.0.0.7:8080" || group != "etl nightly" || outcome >= 0 {
		t.Fatalf("verify: %q %q %d", addr, group, outcome)
	}
	if got := a.preferred(http.Header{"Cookie": {AffinityCookieName + "=" + v}}, "etl nightly"); got != "10.0.0.7:8080" {
		t.Errorf("preferred for the cookie's group: %q", got)
	}
	if got := a.preferred(http.Header{"Cookie": {AffinityCookieName + "=" + v}}, "bi"); got != "" || a.counts[affinityOtherGroup].Load() != 1 {
		t.Errorf("preferred for another group: %q, counted %d", got, a.counts[affinityOtherGroup].Load())
	}
	now = now.Add(time.Minute)
	if _, _, outcome := a.verify(v); outcome != affinityExpired {
		t.Errorf("verify at expiry: outcome %d, want expired", outcome)
	}
	tok, _ := keys.Sign("10.0.0.7:8080", affinityBinding)
	noSpace, _ := a.keys.Sign("10.0.0.7:8080", affinityBinding)
	badExp, _ := a.keys.Sign("soon 10.0.0.7:8080 etl", affinityBinding)
	for name, v := range map[string]string{"routing token": tok, "payload without fields": noSpace, "expiry not a number": badExp, "empty": ""} {
		if _, _, outcome := a.verify(v); outcome != affinityInvalid {
			t.Errorf("%s: outcome %d, want invalid", name, outcome)
		}
	}
}

// What chose a statement's coordinator: its transaction before anything,
// the cookie when its coordinator took the statement, the routing key
// only where the strategy hashes it, else the strategy alone.
func TestChosenBy(t *testing.T) {
	router := func(name string) *routing.Router {
		r, err := routing.New(routing.Config{Discoverer: discovery.NewStatic("test", []discovery.Node{{Addr: "a:1"}}), Strategy: strategy.Named(name)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	hash, poll := router("consistent_hash"), router("poll")
	took := &routing.Attempt{Node: &discovery.Node{Addr: "a:1"}}
	d := Decision{By: "selectors[1]"}
	for _, tc := range []struct {
		req    strategy.Request
		pinned bool
		a      *routing.Attempt
		router *routing.Router
		want   string
	}{
		{strategy.Request{Prefer: "a:1", Key: "k"}, true, took, hash, "transaction"},
		{strategy.Request{Prefer: "a:1", Key: "k"}, false, took, hash, "affinity cookie"},
		{strategy.Request{Prefer: "b:1", Key: "k"}, false, took, hash, "routing key"},
		{strategy.Request{Prefer: "a:1"}, false, nil, poll, ""},
		{strategy.Request{Key: "k"}, false, took, poll, ""},
	} {
		var pinned *discovery.Node
		if tc.pinned {
			pinned = took.Node
		}
		if got := chosenBy(d, &tc.req, pinned, tc.a, tc.router); got.group != "selectors[1]" || got.coordinator != tc.want {
			t.Errorf("%+v pinned %t attempt %v on %s: %+v, want %q", tc.req, tc.pinned, tc.a != nil, tc.router.StrategyName(), got, tc.want)
		}
	}
}
