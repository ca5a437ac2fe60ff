module github.com/zkpresto/zkpresto

go 1.26.1

require (
	github.com/go-zookeeper/zk v1.0.4 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/jmoiron/sqlx v1.4.0 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/prestodb/presto-go-client/v2 v2.1.1 // indirect
	github.com/rs/zerolog v1.34.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.42.0 // indirect
)
