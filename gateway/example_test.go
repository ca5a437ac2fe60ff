package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/zkpresto/zkpresto/discovery"
	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/routing"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
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

// A Presto Router config whose second group is a whole driver DSN: its
// strategy, weights and scheme (the flavour its coordinators speak) are the
// DSN's; the first group takes the config's scheduler.
func ExampleBuildGroups() {
	c, err := gateway.ParseRouterConfig("router-config.json", []byte(`{
  "groups": [
    {"name": "etl", "members": ["http://etl1:8080", "http://etl2:8080"], "weights": [1, 3]},
    {"name": "bi", "members": ["trino://bi1:8080,bi2:8080/;zooKeeperStrategy=weighted_poll;weights=bi1:8080=2"]}
  ],
  "selectors": [{"source": "superset", "targetGroup": "bi"}],
  "scheduler": "WEIGHTED_RANDOM_CHOICE"
}`), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	groups, err := gateway.BuildGroups(c, gateway.BuildOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer groups.Close()
	for _, gr := range groups.Groups() {
		fmt.Printf("%s: %s, flavour %q\n", gr.Name, gr.Router.StrategyName(), gr.Flavour)
	}
	// Output:
	// etl: weighted, flavour ""
	// bi: weighted_poll, flavour "trino"
}
