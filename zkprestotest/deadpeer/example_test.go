//go:build linux

package deadpeer_test

import (
	"context"
	"fmt"
	"log"
	"net"

	"github.com/zkpresto/zkpresto/zkprestotest/deadpeer"
)

// A LateReader connection whose peer closed: the close has arrived (Ended),
// but its reader learns of it only after the next write went through, as
// an HTTP transport that reuses a pooled connection its background reader
// has not yet seen die.
func ExampleLateReader() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()

	var dialer deadpeer.LateReader
	conn, err := dialer.Dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	read := make(chan error, 1)
	go func() {
		_, err := conn.Read(make([]byte, 1))
		read <- err
	}()

	<-dialer.Conns()[0].Ended()
	fmt.Println("the peer's FIN has arrived")
	if _, err := conn.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
		log.Fatal(err)
	}
	fmt.Println("after the write the reader sees:", <-read)
	// Output:
	// the peer's FIN has arrived
	// after the write the reader sees: EOF
}
