package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"testing"
)

// Each line of a head is charged what net/http spends parsing it, besides
// its bytes, until the handler runs, which gives it all back.
func TestHeadBudgetChargesEachField(t *testing.T) {
	const initial = 1 << 20
	b := &headBudget{}
	b.left.Store(initial)
	client, server := net.Pipe()
	defer client.Close()
	c := &budgetConn{Conn: server, b: b, maxLines: DefaultMaxHeaderFields + 2}
	defer c.Close()
	var head bytes.Buffer
	head.WriteString("GET / HTTP/1.1\r\n")
	for i := range 500 {
		fmt.Fprintf(&head, "h%d: v\r\n", i)
	}
	head.WriteString("\r\n")
	go client.Write(head.Bytes())
	if _, err := io.ReadFull(c, make([]byte, head.Len())); err != nil {
		t.Fatal(err)
	}
	if got, want := initial-b.left.Load(), int64(head.Len()+502*headFieldCost); got != want {
		t.Errorf("a head of %d bytes and 502 lines took %d of the budget, want %d", head.Len(), got, want)
	}
	c.handling(true)
	if b.left.Load() != initial {
		t.Errorf("%d of the budget left once the handler runs, want all %d", b.left.Load(), initial)
	}
}
