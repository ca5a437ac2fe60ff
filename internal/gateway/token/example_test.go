package token_test

import (
	"fmt"

	"github.com/zkpresto/zkpresto/internal/gateway/token"
)

// exampleKeys is an example secret file: a new key that signs and the old
// one, still verifying the tokens already handed out.
const exampleKeys = `# gateway routing keys: the first signs, both verify
k2:8f9e2b7c1d0a4e6f5b3c2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918f7e6d5c
k1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff
`

func ExampleKeys_Sign() {
	keys, err := token.ParseKeys(exampleKeys)
	if err != nil {
		fmt.Println(err)
		return
	}
	queryID := "20240501_101112_00001_abcde"
	tok, err := keys.Sign("http://10.0.0.7:8080", queryID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tok)
	fmt.Println("https://gateway.example.com" + token.Prefix(tok) + "/v1/statement/executing/" + queryID + "/y0/1")

	coordinator, err := keys.Verify(tok, queryID)
	fmt.Println(coordinator, err)

	// The same token on another query's path is refused.
	_, err = keys.Verify(tok, "20240501_101112_00002_fghij")
	fmt.Println(err)
	// Output:
	// k2.aHR0cDovLzEwLjAuMC43OjgwODA.99G49GrvlAlZDods0PYQoQ
	// https://gateway.example.com/_zk/k2.aHR0cDovLzEwLjAuMC43OjgwODA.99G49GrvlAlZDods0PYQoQ/v1/statement/executing/20240501_101112_00001_abcde/y0/1
	// http://10.0.0.7:8080 <nil>
	// token: bad MAC
}

func ExampleSplit() {
	tok, rest, ok := token.Split("/_zk/k2.aHR0cDovLzEwLjAuMC43OjgwODA.99G49GrvlAlZDods0PYQoQ/v1/statement/executing/q/y0/1")
	fmt.Println(tok)
	fmt.Println(rest, ok)
	_, _, ok = token.Split("/v1/statement")
	fmt.Println(ok)
	// Output:
	// k2.aHR0cDovLzEwLjAuMC43OjgwODA.99G49GrvlAlZDods0PYQoQ
	// /v1/statement/executing/q/y0/1 true
	// false
}

func ExampleParseKeys() {
	// An environment variable carries both keys on one line.
	keys, err := token.ParseKeys("k2:8f9e2b7c1d0a4e6f5b3c2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918f7e6d5c,k1:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")
	fmt.Println(keys, err)

	// A key without a kid is named by a hash of it.
	keys, err = token.ParseKeys("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")
	fmt.Println(keys.Kids(), err)

	// Errors name the line and what is wanted, never the key.
	_, err = token.ParseKeys("k1:00112233445566778899aabbccddeeff")
	fmt.Println(err)
	// Output:
	// token.Keys{k2, k1} <nil>
	// [3e9426a2] <nil>
	// token: keys: line 1: key too short: want at least 64 hex digits (32 bytes), e.g. from openssl rand -hex 32
}
