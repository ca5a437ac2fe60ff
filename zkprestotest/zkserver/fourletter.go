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

// dumpTimeout bounds a "dump" exchange, whose reply lists every session and
// so is larger than that of the probes above; tests poll it while the
// server is busy expiring sessions.
const dumpTimeout = 5 * time.Second

// fourLetter sends a four-letter-word command (such as "ruok" or "srvr") to
// the server at addr and returns its whole reply, all within timeout.
func fourLetter(addr, cmd string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", fmt.Errorf("zkserver: %s %s: %w", cmd, addr, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
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

// Dump returns the server's reply to the "dump" four-letter word: the
// sessions it holds (by hexadecimal ID, such as 0x1000a2b3c4d0000) and
// their ephemeral znodes.
func (s *Server) Dump() (string, error) {
	return fourLetter(s.Addr(), "dump", dumpTimeout)
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
