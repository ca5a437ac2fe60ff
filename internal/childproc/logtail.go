package childproc

import (
	"bytes"
	"io"
	"os"
)

// logTailWindow is how far back from the end LogTail reads: a server's log
// may be large, and a tail is for an error message.
const logTailWindow = 256 << 10

// LogTail returns the last n lines of the log file at path, read from its
// last 256 kB, or "" for n <= 0.
func LogTail(path string, n int) (string, error) {
	if n <= 0 {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	start := max(info.Size()-logTailWindow, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, start, info.Size()-start))
	if err != nil {
		return "", err
	}
	if start > 0 {
		// Drop the partial first line.
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n"))), nil
}
