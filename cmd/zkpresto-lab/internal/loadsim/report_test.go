package loadsim_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/cmd/zkpresto-lab/internal/loadsim"
)

// quickReport runs the default scenarios, shortened, with a few strategies.
func quickReport(t *testing.T, strategies []string) *loadsim.Report {
	t.Helper()
	scenarios := loadsim.DefaultScenarios()
	for i := range scenarios {
		scenarios[i].Requests = 5_000
	}
	var progressed []int
	r, err := loadsim.RunAll(context.Background(), scenarios, strategies, func(i int, took time.Duration) {
		progressed = append(progressed, i)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(progressed) != len(scenarios) {
		t.Errorf("progress reported scenarios %v, want each of %d once", progressed, len(scenarios))
	}
	return r
}

func TestRunAllResolvesNames(t *testing.T) {
	r := quickReport(t, []string{"ROUND_ROBIN", "random", "poll", "weighted_random"})
	if got := strings.Join(r.Strategies, ","); got != "poll,random,weighted" {
		t.Errorf("strategies %q, want aliases resolved and repeats dropped", got)
	}
	for i := range r.Scenarios {
		if ratio, ok := r.P99Ratio(i, "random"); !ok || ratio != 1 {
			t.Errorf("scenario %d: random vs random = %v, %v", i, ratio, ok)
		}
		res, ok := r.Result(i, "poll")
		if !ok || res.Strategy != "poll" || res.Scenario != r.Scenarios[i].Name {
			t.Errorf("scenario %d: poll result %+v, %v", i, res, ok)
		}
	}
	if _, ok := r.P99Ratio(0, "user_hash"); ok {
		t.Error("a ratio for a strategy that was not simulated")
	}

	// Every registered strategy when none are named.
	all := quickReport(t, nil)
	for _, want := range []string{"random", "poll", "weighted", fewestInFlight} {
		if _, ok := all.Result(0, want); !ok {
			t.Errorf("default strategies %v lack %s", all.Strategies, want)
		}
	}

	if _, err := loadsim.RunAll(context.Background(), loadsim.DefaultScenarios(), []string{"random", "nope"}, nil); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown strategy: error %v", err)
	}
}

func TestRunAllStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := loadsim.RunAll(ctx, loadsim.DefaultScenarios(), nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

func TestWriteTable(t *testing.T) {
	r := quickReport(t, []string{"random", "poll", "weighted"})
	var out bytes.Buffer
	if err := r.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, s := range r.Scenarios {
		if !strings.Contains(text, s.Name+": ") {
			t.Errorf("table lacks scenario %q:\n%s", s.Name, text)
		}
	}
	lines := strings.Split(text, "\n")
	rows := 0
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && (f[0] == "random" || f[0] == "poll" || f[0] == "weighted") {
			rows++
		}
	}
	if rows != 3*len(r.Scenarios) {
		t.Errorf("%d strategy rows, want %d:\n%s", rows, 3*len(r.Scenarios), text)
	}
	// random overloads the small nodes of 1:1:4; the table says so.
	if !strings.Contains(text, "* overloaded") {
		t.Errorf("no overload note:\n%s", text)
	}
}

func TestWriteMarkdown(t *testing.T) {
	r := quickReport(t, []string{"random", "weighted_poll"})
	var out bytes.Buffer
	if err := r.WriteMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if got := strings.Count(text, "\n#### "); got+boolInt(strings.HasPrefix(text, "#### ")) != len(r.Scenarios) {
		t.Errorf("%d headings, want %d:\n%s", got, len(r.Scenarios), text)
	}
	header := "| strategy | p50 ms | mean ms | p99 ms | p99.9 ms | p99 vs random |"
	if strings.Count(text, header) != len(r.Scenarios) {
		t.Errorf("want the header %q once per scenario:\n%s", header, text)
	}
	if strings.Count(text, "| weighted_poll |") != len(r.Scenarios) {
		t.Errorf("want one weighted_poll row per scenario:\n%s", text)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestWriteSVG(t *testing.T) {
	r := quickReport(t, []string{"random", "poll", "weighted", "weighted_poll"})
	var out bytes.Buffer
	if err := r.WriteSVG(&out); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&out)
	bars := map[string]int{} // by title
	var root string
	var inBar bool
	var texts []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
			}
			if el.Name.Local == "rect" && attr(el, "class") == "bar" {
				inBar = true
			}
		case xml.CharData:
			if inBar {
				bars[strings.TrimSpace(string(el))]++
			} else if s := strings.TrimSpace(string(el)); s != "" {
				texts = append(texts, s)
			}
		case xml.EndElement:
			if el.Name.Local == "rect" {
				inBar = false
			}
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	want := len(r.Scenarios) * len(r.Strategies)
	if len(bars) != want {
		t.Errorf("%d distinct bars, want %d (one per scenario × strategy): %v", len(bars), want, bars)
	}
	for _, s := range r.Scenarios {
		for _, name := range r.Strategies {
			found := false
			for title, n := range bars {
				if strings.HasPrefix(title, s.Name+", "+name+": p99 ") && n == 1 {
					found = true
				}
			}
			if !found {
				t.Errorf("no single bar for %s in %s", name, s.Name)
			}
		}
	}
	joined := strings.Join(texts, "\n")
	for _, want := range append([]string{"p99 latency (log scale)", "strategy"}, r.Strategies...) {
		if !strings.Contains(joined, want) {
			t.Errorf("chart lacks the text %q", want)
		}
	}
}

func attr(el xml.StartElement, name string) string {
	for _, a := range el.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}
