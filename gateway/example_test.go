package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/internal/testrig/coordinator"
	"github.com/zkpresto/zkpresto/routing"
)

// A gateway over a static list of one coordinator: the statement's
// nextUri points at the gateway, behind a routing token.
func ExampleNew() {
	c, err := coordinator.Start(coordinator.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	r, _ := routing.New(routing.Config{Discoverer: discovery.NewStatic("example", []discovery.Node{{Addr: c.Addr()}})})
	defer r.Close()
	g, err := gateway.New(gateway.Config{
		Router: r,
		Keys:   "k1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(g)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/statement", strings.NewReader("SELECT * FROM rows(2)"))
	req.Header.Set("X-Presto-User", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var answer struct {
		NextURI string `json:"nextUri"`
	}
	json.NewDecoder(resp.Body).Decode(&answer)
	fmt.Println(resp.Status)
	fmt.Println(strings.HasPrefix(answer.NextURI, srv.URL+"/_zk/k1."))
	// Output:
	// 200 OK
	// true
}
