package zkserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// fourLetterTimeout bounds one four-letter-word exchange; a paused server
// accepts the connection in the kernel but never answers.
const fourLetterTimeout = time.Second

// fourLetter sends a four-letter-word command (such as "ruok" or "srvr") to
// the server at addr and returns its whole reply.
func fourLetter(addr, cmd string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, fourLetterTimeout)
	if err != nil {
		return "", fmt.Errorf("zkserver: %s %s: %w", cmd, addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(fourLetterTimeout)); err != nil {
		return "", fmt.Errorf("zkserver: %s %s: %w", cmd, addr, err)
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", fmt.Errorf("zkserver: %s %s: %w", cmd, addr, err)
	}
	reply, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("zkserver: %s %s: %w", cmd, addr, err)
	}
	return string(reply), nil
}

// parseMode extracts the value of the "Mode:" line of a srvr/stat reply.
func parseMode(reply string) (string, error) {
	sc := bufio.NewScanner(strings.NewReader(reply))
	for sc.Scan() {
		if mode, ok := strings.CutPrefix(sc.Text(), "Mode:"); ok {
			return strings.TrimSpace(mode), nil
		}
	}
	return "", fmt.Errorf("zkserver: no Mode in srvr reply %q", strings.TrimSpace(reply))
}
