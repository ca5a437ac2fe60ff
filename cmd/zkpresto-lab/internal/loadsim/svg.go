package loadsim

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"time"
)

// palette holds distinguishable bar colours (Tableau 10), one per strategy;
// beyond ten they repeat.
var palette = []string{
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
}

// Chart geometry, in SVG user units.
const (
	chartWidth   = 1000
	chartHeight  = 500
	marginLeft   = 80
	marginRight  = 170 // the legend
	marginTop    = 72
	marginBottom = 70
)

// WriteSVG writes a grouped bar chart of p99 latency: one group per scenario,
// one bar per strategy, on a logarithmic axis (the overloaded strategies are
// orders of magnitude slower than the rest). Each bar is a rect of class
// "bar" with a title giving the exact figures.
func (r *Report) WriteSVG(w io.Writer) error {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range r.Results {
		for _, res := range row {
			ms := millis(res.P99)
			if ms > 0 {
				lo, hi = min(lo, ms), max(hi, ms)
			}
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 1, 10
	}
	// Whole decades, so that gridlines fall on 1, 10, 100 ...
	bottom := math.Floor(math.Log10(lo))
	top := math.Ceil(math.Log10(hi))
	if top <= bottom {
		top = bottom + 1
	}
	plotW := float64(chartWidth - marginLeft - marginRight)
	plotH := float64(chartHeight - marginTop - marginBottom)
	y := func(ms float64) float64 {
		if ms <= 0 {
			return marginTop + plotH
		}
		return marginTop + plotH*(1-(math.Log10(ms)-bottom)/(top-bottom))
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartWidth, chartHeight, chartWidth, chartHeight)
	// Hatching marks the bars of overloaded strategies.
	b.WriteString(`<defs><pattern id="overloaded" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
		`<line x1="0" y1="0" x2="0" y2="6" stroke="white" stroke-width="2" stroke-opacity="0.6"/></pattern></defs>` + "\n")
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartWidth, chartHeight)
	text(&b, chartWidth/2, 22, "middle", 15, "bold", "", "p99 latency per strategy and scenario (lower is better)")
	text(&b, chartWidth/2, 38, "middle", 11, "", "", "hatched, *: overloaded (a node got more work than it can do; its queue and p99 keep growing with the run's length)")

	// Gridlines and tick labels, one per decade.
	for d := bottom; d <= top; d++ {
		yy := y(math.Pow(10, d))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#dddddd"/>`+"\n", marginLeft, yy, marginLeft+plotW, yy)
		text(&b, marginLeft-6, yy+4, "end", 11, "", "", decadeLabel(d))
	}
	// Axes and their labels.
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%.1f" stroke="black"/>`+"\n", marginLeft, marginTop, marginLeft, marginTop+plotH)
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", marginLeft, marginTop+plotH, marginLeft+plotW, marginTop+plotH)
	text(&b, 18, marginTop+plotH/2, "middle", 13, "", fmt.Sprintf("rotate(-90 18 %.1f)", marginTop+plotH/2), "p99 latency (log scale)")
	text(&b, marginLeft+plotW/2, chartHeight-14, "middle", 13, "", "", "scenario (capacity ratio, slowdown, load as share of capacity)")

	// Bars, grouped by scenario.
	groupW := plotW / float64(max(len(r.Scenarios), 1))
	barW := groupW * 0.8 / float64(max(len(r.Strategies), 1))
	for i, s := range r.Scenarios {
		left := marginLeft + float64(i)*groupW + groupW*0.1
		for j, name := range r.Strategies {
			res := r.Results[i][j]
			ms := millis(res.P99)
			x := left + float64(j)*barW
			top := y(ms)
			fmt.Fprintf(&b, `<rect class="bar" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s">`,
				x+0.5, top, barW-1, marginTop+plotH-top, palette[j%len(palette)])
			b.WriteString("<title>")
			xml.EscapeText(&b, []byte(fmt.Sprintf("%s, %s: p99 %s ms", s.Name, name, formatMillis(res.P99))))
			b.WriteString("</title></rect>\n")
			label := shortDuration(res.P99)
			if res.Overloaded() {
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="url(#overloaded)"/>`+"\n",
					x+0.5, top, barW-1, marginTop+plotH-top)
				label += "*"
			}
			cx := x + barW/2 + 3
			text(&b, cx, top-4, "start", 9, "", fmt.Sprintf("rotate(-90 %.1f %.1f)", cx, top-4), label)
		}
		text(&b, marginLeft+float64(i)*groupW+groupW/2, marginTop+plotH+20, "middle", 12, "", "", s.Name)
	}

	// Legend.
	lx := float64(chartWidth - marginRight + 20)
	text(&b, lx, marginTop+4, "start", 12, "bold", "", "strategy")
	for j, name := range r.Strategies {
		ly := float64(marginTop+18) + float64(j)*20
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="14" height="14" fill="%s"/>`+"\n", lx, ly, palette[j%len(palette)])
		text(&b, lx+20, ly+11, "start", 12, "", "", name)
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// text writes an SVG text element; weight and transform may be empty.
func text(b *bytes.Buffer, x, y float64, anchor string, size int, weight, transform, s string) {
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" font-size="%d"`, x, y, anchor, size)
	if weight != "" {
		fmt.Fprintf(b, ` font-weight="%s"`, weight)
	}
	if transform != "" {
		fmt.Fprintf(b, ` transform="%s"`, transform)
	}
	b.WriteByte('>')
	xml.EscapeText(b, []byte(s))
	b.WriteString("</text>\n")
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// decadeLabel names 10^d milliseconds: "1 ms", "100 ms", "1 s", "1,000 s".
func decadeLabel(d float64) string {
	if d < 3 {
		return fmt.Sprintf("%g ms", math.Pow(10, d))
	}
	return groupThousands(fmt.Sprintf("%.0f", math.Pow(10, d-3))) + " s"
}

// shortDuration writes d compactly for a bar label: "412ms", "3.2s", "7412s".
func shortDuration(d time.Duration) string {
	ms := millis(d)
	switch {
	case ms < 10:
		return fmt.Sprintf("%.1fms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0fms", ms)
	case ms < 100_000:
		return fmt.Sprintf("%.1fs", ms/1000)
	default:
		return fmt.Sprintf("%.0fs", ms/1000)
	}
}
