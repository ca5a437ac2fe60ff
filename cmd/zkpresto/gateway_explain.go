package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/zkpresto/zkpresto/gateway"
)

// explainTimeout bounds the opening of the chosen group's discovery.
const explainTimeout = 10 * time.Second

// runExplain prints where o.config routes the sample request o describes,
// by the rules the gateway routes by (gateway.Groups.Explain).
func runExplain(ctx context.Context, out io.Writer, o gatewayOptions) error {
	if o.config == "" {
		return errors.New("--explain needs --config: the router config whose routing it explains")
	}
	header := http.Header{}
	for _, h := range o.explainHeaders {
		name, value, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return fmt.Errorf("--explain-header %q: want 'Name: value'", h)
		}
		header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	for name, v := range map[string]string{"X-Trino-User": o.explainUser, "X-Trino-Source": o.explainSource, "X-Trino-Client-Tags": o.explainTags} {
		if v != "" {
			header.Set(name, v)
		}
	}
	var at time.Time
	if o.explainAt != "" {
		var err error
		if at, err = time.Parse(time.RFC3339, o.explainAt); err != nil {
			return fmt.Errorf("--explain-at: %w", err)
		}
	}
	gs, err := gateway.LoadConfig(o.config, gateway.BuildOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer gs.Close()
	ctx, cancel := context.WithTimeout(ctx, explainTimeout)
	defer cancel()
	e, err := gs.Explain(ctx, header, o.explain, at)
	var re *gateway.RouteError
	if errors.As(err, &re) {
		if e.Hook != "" {
			fmt.Fprintf(out, "hook: %s\n", e.Hook)
		}
		fmt.Fprintf(out, "refused: %d %s\n", re.Status, re.Message)
		return nil
	}
	if err != nil {
		return err
	}
	writeExplanation(out, e)
	return nil
}

// writeExplanation prints e, one fact a line.
func writeExplanation(out io.Writer, e gateway.Explanation) {
	if e.Hook != "" {
		fmt.Fprintf(out, "hook: %s\n", e.Hook)
	}
	if e.Group == "" {
		var ws []string
		for _, name := range slices.Sorted(maps.Keys(e.Weights)) {
			ws = append(ws, fmt.Sprintf("%s=%d", name, e.Weights[name]))
		}
		fmt.Fprintf(out, "group: by weight (%s)\nwhy: %s\n", strings.Join(ws, ", "), e.Why)
	} else {
		fmt.Fprintf(out, "group: %s\nwhy: %s\n", e.Group, e.Why)
	}
	if e.Key != "" {
		fmt.Fprintf(out, "routing key: %q (consistent_hash hashes it instead of the user)\n", e.Key)
	}
	switch {
	case e.Discovery != nil:
		fmt.Fprintf(out, "coordinators: unknown (%v)\n", e.Discovery)
	case e.Group != "":
		fmt.Fprintf(out, "coordinators: %s\n", strings.Join(e.Coordinators, ", "))
	}
}
