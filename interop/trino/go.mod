module github.com/zkpresto/zkpresto/interop/trino

go 1.27

toolchain go1.27.3

require (
	github.com/trinodb/trino-go-client v1.5.0
	github.com/zkpresto/zkpresto v0.0.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/go-jose/go-jose/v4 v4.1.8 // indirect
	github.com/go-zookeeper/zk v1.0.4 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/hashicorp/go-uuid v1.0.4 // indirect
	github.com/jcmturner/aescts/v2 v2.0.0 // indirect
	github.com/jcmturner/dnsutils/v2 v2.0.0 // indirect
	github.com/jcmturner/gofork v1.7.6 // indirect
	github.com/jcmturner/goidentity/v6 v6.0.1 // indirect
	github.com/jcmturner/gokrb5/v8 v8.4.4 // indirect
	github.com/jcmturner/rpc/v2 v2.0.3 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/oauth2-proxy/mockoidc v0.0.0-20261103160011-e06ed0b7cb7f // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/net v0.61.0 // indirect
)

replace github.com/zkpresto/zkpresto => ../..
