// Package testtls makes throwaway certificates for tests and the zoo.cfg lines
// that give a ZooKeeper server (package zkserver) a TLS client port.
//
// Generate writes a fresh ECDSA CA, a server certificate for 127.0.0.1 and
// localhost, and a client certificate, all signed by that CA, as PEM files.
// ServerConfig turns them into the settings ZooKeeper 3.8 needs for its
// Netty secure client port, which requires a client certificate by default.
// NewPort does both and picks a free port for them.
package testtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Files are the PEM files Generate wrote.
type Files struct {
	// CAFile holds the CA certificate: the trust store for both sides.
	CAFile string
	// ServerKeyStore holds the server's PKCS#8 private key followed by its
	// certificate, the layout ZooKeeper's PEM key store reads.
	ServerKeyStore string
	// ClientCertFile and ClientKeyFile are the client's certificate and its
	// PKCS#8 private key.
	ClientCertFile, ClientKeyFile string
}

// Generate writes a CA, a server certificate and a client certificate into
// dir, valid for a day. name distinguishes the CAs of several calls.
func Generate(dir, name string) (*Files, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testtls: CA key: %w", err)
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name + " test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("testtls: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("testtls: CA certificate: %w", err)
	}

	issue := func(serial int64, cn string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		template := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
			DNSNames:     []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), nil
	}
	serverCert, serverKey, err := issue(2, "zookeeper", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, fmt.Errorf("testtls: server certificate: %w", err)
	}
	clientCert, clientKey, err := issue(3, "zkpresto client", x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, fmt.Errorf("testtls: client certificate: %w", err)
	}

	f := &Files{
		CAFile:         filepath.Join(dir, name+"-ca.pem"),
		ServerKeyStore: filepath.Join(dir, name+"-server.pem"),
		ClientCertFile: filepath.Join(dir, name+"-client.pem"),
		ClientKeyFile:  filepath.Join(dir, name+"-client-key.pem"),
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	for path, data := range map[string][]byte{
		f.CAFile:         caPEM,
		f.ServerKeyStore: append(serverKey, serverCert...),
		f.ClientCertFile: clientCert,
		f.ClientKeyFile:  clientKey,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("testtls: %w", err)
		}
	}
	return f, nil
}

// ServerTLS returns a TLS configuration that serves the server certificate
// (for 127.0.0.1 and localhost), for a test server in Go.
func (f *Files) ServerTLS() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(f.ServerKeyStore, f.ServerKeyStore)
	if err != nil {
		return nil, fmt.Errorf("testtls: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}}, nil
}

// ClientTLS returns a TLS configuration that trusts the CA only, for a
// test client in Go.
func (f *Files) ClientTLS() (*tls.Config, error) {
	pem, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, fmt.Errorf("testtls: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("testtls: no certificate in %s", f.CAFile)
	}
	return &tls.Config{RootCAs: roots}, nil
}

// ServerConfig returns the zoo.cfg lines for a TLS client port on
// securePort using f (pass them as zkserver.Options.ExtraConfig). The plain
// client port keeps working beside it.
func ServerConfig(f *Files, securePort int) []string {
	return []string{
		"secureClientPort=" + strconv.Itoa(securePort),
		"secureClientPortAddress=127.0.0.1",
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"ssl.keyStore.location=" + f.ServerKeyStore,
		"ssl.keyStore.type=PEM",
		"ssl.trustStore.location=" + f.CAFile,
		"ssl.trustStore.type=PEM",
	}
}

// Port is a TLS client port for a ZooKeeper server: the certificates that
// secure it, its loopback address, and the zoo.cfg lines that open it.
type Port struct {
	// Files are the CA, server and client certificates (see Generate).
	Files *Files
	// Addr is the port's address, 127.0.0.1:port, for clients.
	Addr string
	// Config holds the zoo.cfg lines for the port (see ServerConfig).
	Config []string
}

// NewPort writes certificates into dir (name as for Generate) and picks a
// free loopback port to serve TLS on with them.
func NewPort(dir, name string) (*Port, error) {
	files, err := Generate(dir, name)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	return &Port{Files: files, Addr: "127.0.0.1:" + strconv.Itoa(port), Config: ServerConfig(files, port)}, nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("testtls: %w", err)
	}
	defer ln.Close()
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("testtls: listener has no TCP address")
	}
	return addr.Port, nil
}
