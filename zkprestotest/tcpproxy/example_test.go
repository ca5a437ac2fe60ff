package tcpproxy_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/zkpresto/zkpresto/zkprestotest/tcpproxy"
)

// A proxy in front of a server drops every connection, then heals; a
// client that cannot tell sees the server come and go.
func Example() {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "hello")
	}))
	defer server.Close()
	proxy, err := tcpproxy.Start(server.Listener.Addr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer proxy.Close()

	get := func() {
		// A fresh transport each time, so that no pooled connection hides the mode.
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get("http://" + proxy.Addr() + "/")
		if err != nil {
			fmt.Println(proxy.Mode(), "fails")
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Println(proxy.Mode(), "answers", string(body))
	}
	get()
	proxy.Drop()
	get()
	proxy.Heal()
	get()
	// Output:
	// pass answers hello
	// drop fails
	// pass answers hello
}
