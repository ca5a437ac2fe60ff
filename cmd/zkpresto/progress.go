package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chzyer/readline"

	zkdriver "github.com/zkpresto/zkpresto/driver"
)

// progressInterval is how often the progress lines are redrawn.
const progressInterval = 250 * time.Millisecond

// renderProgress returns the lines presto-cli shows while a query runs,
// from the latest report p and the time since the statement started,
// each cut to width cells:
//
//	Query 20240101_120000_00001_abcde, RUNNING, 3 nodes, 36 splits
//	0:12 [1.2M rows, 22.5MB] [104K rows/s, 1.9MB/s] [=====>>       ] 45%
//
// The bar shows completed (=) and running (>) splits, the percentage is
// left out when the coordinator does not report one.
func renderProgress(p zkdriver.Progress, elapsed time.Duration, width int) []string {
	state := p.State
	if state == "" {
		state = "WAITING"
	}
	first := "Query"
	if p.QueryID != "" {
		first += " " + p.QueryID + ","
	}
	first += " " + state
	if p.Nodes > 0 {
		first += ", " + plural(p.Nodes, "node")
	}
	if p.TotalSplits > 0 {
		first += ", " + plural(p.TotalSplits, "split")
	}
	secs := elapsed.Seconds()
	second := fmt.Sprintf("%s [%s rows, %s] [%s rows/s, %s/s]", formatElapsed(elapsed),
		formatCount(float64(p.ProcessedRows)), formatBytes(float64(p.ProcessedBytes)),
		formatCount(rate(float64(p.ProcessedRows), secs)), formatBytes(rate(float64(p.ProcessedBytes), secs)))
	if p.TotalSplits > 0 {
		const barWidth = 17
		done := min(barWidth, p.CompletedSplits*barWidth/p.TotalSplits)
		running := min(barWidth-done, p.RunningSplits*barWidth/p.TotalSplits)
		second += " [" + strings.Repeat("=", done) + strings.Repeat(">", running) + strings.Repeat(" ", barWidth-done-running) + "]"
	}
	if p.HasPercentage {
		second += " " + strconv.Itoa(int(math.Min(100, math.Max(0, p.Percentage)))) + "%"
	}
	lines := []string{first, second}
	for i, l := range lines {
		if r := []rune(l); width > 0 && len(r) > width {
			lines[i] = string(r[:width])
		}
	}
	return lines
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func rate(v, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return v / secs
}

// formatElapsed writes a duration as presto-cli does: m:ss.
func formatElapsed(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// formatCount writes a count with presto-cli's K, M, B, T suffixes.
func formatCount(v float64) string {
	return scaled(v, 1000, []string{"K", "M", "B", "T"})
}

// formatBytes writes a size with presto-cli's B, kB, MB... units (1024).
func formatBytes(v float64) string {
	if v < 1024 {
		return strconv.FormatInt(int64(v), 10) + "B"
	}
	return scaled(v, 1024, []string{"kB", "MB", "GB", "TB", "PB"})
}

// scaled writes v divided by step as often as it stays at least step,
// with the unit of that many divisions (none for none).
func scaled(v, step float64, units []string) string {
	unit := ""
	for _, u := range units {
		if v < step {
			break
		}
		v /= step
		unit = u
	}
	return shortNumber(v) + unit
}

// shortNumber keeps about three significant digits, as presto-cli does.
func shortNumber(v float64) string {
	switch {
	case v == math.Trunc(v) || v >= 100:
		return strconv.FormatFloat(math.Trunc(v), 'f', -1, 64)
	case v >= 10:
		return strconv.FormatFloat(math.Trunc(v*10)/10, 'f', -1, 64)
	}
	return strconv.FormatFloat(math.Trunc(v*100)/100, 'f', -1, 64)
}

// showProgress decides whether progress is drawn on w: only on a
// terminal, where it can be redrawn in place; never into a file or pipe.
func showProgress(enabled bool, w io.Writer, isTerminal func(io.Writer) bool) bool {
	return enabled && isTerminal(w)
}

// writerIsTerminal reports whether w is a terminal.
func writerIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && readline.IsTerminal(int(f.Fd()))
}

// terminalWidth is w's width in cells, 80 when unknown.
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if width, _, err := readline.GetSize(int(f.Fd())); err == nil && width > 0 {
			return width
		}
	}
	return 80
}

// progressDisplay redraws a statement's progress lines in place on a
// terminal until stopped, when it erases them.
type progressDisplay struct {
	w       io.Writer
	width   int
	started time.Time
	now     func() time.Time

	mu      sync.Mutex
	latest  zkdriver.Progress
	drawn   int // lines on the screen
	stopped bool
	done    chan struct{}
}

// startProgress starts drawing on w every progressInterval.
func startProgress(w io.Writer, width int) *progressDisplay {
	d := &progressDisplay{w: w, width: width, started: time.Now(), now: time.Now, done: make(chan struct{})}
	go func() {
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-d.done:
				return
			case <-t.C:
				d.draw()
			}
		}
	}()
	return d
}

// update records the latest report.
func (d *progressDisplay) update(p zkdriver.Progress) {
	d.mu.Lock()
	d.latest = p
	d.mu.Unlock()
}

func (d *progressDisplay) draw() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	lines := renderProgress(d.latest, d.now().Sub(d.started), d.width-1)
	var b strings.Builder
	d.erase(&b)
	b.WriteString(strings.Join(lines, "\n"))
	d.drawn = len(lines)
	io.WriteString(d.w, b.String())
}

// erase writes what clears the lines drawn, leaving the cursor where the
// first one started.
func (d *progressDisplay) erase(b *strings.Builder) {
	if d.drawn == 0 {
		return
	}
	b.WriteString("\r\x1b[K")
	for range d.drawn - 1 {
		b.WriteString("\x1b[1A\x1b[K")
	}
	d.drawn = 0
}

// stop erases the progress lines and stops drawing; it may be called more
// than once.
func (d *progressDisplay) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return
	}
	d.stopped = true
	close(d.done)
	var b strings.Builder
	d.erase(&b)
	io.WriteString(d.w, b.String())
}

// stopOnWrite is a writer that stops a progress display before its first
// write: once results appear, the progress lines would only get in their
// way.
type stopOnWrite struct {
	io.Writer
	stop func()
}

func (s stopOnWrite) Write(p []byte) (int, error) {
	s.stop()
	return s.Writer.Write(p)
}
