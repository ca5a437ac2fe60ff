package lostpage_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"strings"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/lostpage"
)

// A client walks a query's pages through the proxy: the first GET of each
// executing page fails, its connection reset after the coordinator answered,
// and the GET of the same nextUri again gets that page, so every row
// arrives once.
func Example() {
	c, err := coordinator.Start(coordinator.Options{BatchRows: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	proxy, err := lostpage.Start(c.Addr())
	if err != nil {
		log.Fatal(err)
	}
	defer proxy.Close()

	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	var page struct {
		NextURI string  `json:"nextUri"`
		Data    [][]any `json:"data"`
	}
	fetch := func(req *http.Request) error {
		req.Header.Set("X-Presto-User", "alice")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		page.NextURI, page.Data = "", nil
		return json.NewDecoder(resp.Body).Decode(&page)
	}

	req, _ := http.NewRequest(http.MethodPost, proxy.URL()+"/v1/statement", strings.NewReader("SELECT * FROM rows(5)"))
	if err := fetch(req); err != nil {
		log.Fatal(err)
	}
	var rows []any
	retried := 0
	for page.NextURI != "" {
		uri := page.NextURI
		req, _ := http.NewRequest(http.MethodGet, uri, nil)
		if err := fetch(req); err != nil {
			// The answer was lost (an executing page, or PrestoDB's first page on
			// the queued resource): the same token again.
			retried++
			req, _ := http.NewRequest(http.MethodGet, uri, nil)
			if err := fetch(req); err != nil {
				log.Fatal(err)
			}
		}
		for _, row := range page.Data {
			rows = append(rows, row[0])
		}
	}
	fmt.Println("rows:", rows)
	fmt.Println("statements run:", c.Statements())
	fmt.Println("answers lost:", proxy.Lost(), "retried:", retried)
	// Output:
	// rows: [1 2 3 4 5]
	// statements run: 1
	// answers lost: 3 retried: 3
}
