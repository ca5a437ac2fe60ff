package driver

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestRedactSlugs(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`Get "http://h:1/v1/statement/executing/20261205_1_00008_a/y8ccb93/2": context canceled`,
			`Get "http://h:1/v1/statement/executing/20261205_1_00008_a/REDACTED/2": context canceled`},
		{`Get "http://h:1/v1/statement/queued/20261205_1_00006_u/3?slug=xaea040a": context canceled`,
			`Get "http://h:1/v1/statement/queued/20261205_1_00006_u/3?slug=REDACTED": context canceled`},
		{`Post "http://h:1/v1/statement": context canceled`, `Post "http://h:1/v1/statement": context canceled`},
	} {
		err := redactSlugs(fmt.Errorf("wrapped: %w", errors.Join(errors.New(c.in), context.Canceled)))
		if got := err.Error(); got != "wrapped: "+c.want+"\ncontext canceled" {
			t.Errorf("redactSlugs(%q) = %q", c.in, got)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("redactSlugs(%q) hides context.Canceled", c.in)
		}
	}
}
