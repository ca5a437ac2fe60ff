package testtls_test

import (
	"crypto/tls"
	"fmt"
	"os"
	"strings"

	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

func ExampleGenerate() {
	dir, err := os.MkdirTemp("", "testtls-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	files, err := testtls.Generate(dir, "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	// The client pair loads as Go's TLS stack needs it.
	if _, err := tls.LoadX509KeyPair(files.ClientCertFile, files.ClientKeyFile); err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range testtls.ServerConfig(files, 2281) {
		key, _, _ := strings.Cut(line, "=")
		fmt.Println(key)
	}
	// Output:
	// secureClientPort
	// secureClientPortAddress
	// serverCnxnFactory
	// ssl.keyStore.location
	// ssl.keyStore.type
	// ssl.trustStore.location
	// ssl.trustStore.type
}

func ExampleNewPort() {
	dir, err := os.MkdirTemp("", "testtls-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	port, err := testtls.NewPort(dir, "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	// The address is where clients reach the port the first line opens.
	_, number, _ := strings.Cut(port.Addr, ":")
	fmt.Println(strings.HasPrefix(port.Addr, "127.0.0.1:"), port.Config[0] == "secureClientPort="+number)
	// Output: true true
}
