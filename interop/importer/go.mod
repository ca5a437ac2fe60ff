module github.com/zkpresto/zkpresto/interop/importer

go 1.26.1

require github.com/zkpresto/zkpresto v0.0.0

require (
	github.com/go-zookeeper/zk v1.0.4 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/prestodb/presto-go-client/v2 v2.1.1 // indirect
	github.com/rs/zerolog v1.34.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

// The repository's own code, as a program that imports the driver gets it.
// No other replace: presto-go-client comes as its release, v2.1.1.
replace github.com/zkpresto/zkpresto => ../..
