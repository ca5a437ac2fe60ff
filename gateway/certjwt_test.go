package gateway_test

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkpresto/zkpresto/gateway"
	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
	"github.com/zkpresto/zkpresto/zkprestotest/testjwt"
	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

// verifyJWT checks token's RS256 signature with pub and returns its
// header and claims.
func verifyJWT(t *testing.T, token string, pub *rsa.PublicKey) (map[string]any, map[string]any) {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("a token of %d parts", len(parts))
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub, crypto.SHA256, digest[:], sig); err != nil {
		t.Fatalf("the token's signature: %v", err)
	}
	var header, claims map[string]any
	for i, v := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	return header, claims
}

// TestClientCertificateBecomesAJWT checks Config.ClientCertJWT: a client
// that presents a certificate the listener verifies reaches the
// coordinator with the gateway's token for the certificate's common name,
// on every request of its statement, whatever Authorization it sent; a
// client without a certificate passes its own through.
func TestClientCertificateBecomesAJWT(t *testing.T) {
	dir := t.TempDir()
	key, err := testjwt.Generate(dir, "gateway-signer")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := gateway.LoadSigningKey(key.PrivateKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordinator.Start(coordinator.Options{Flavour: coordinator.Trino})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g, _ := staticGateway(t, gateway.Config{Flavour: gateway.Trino, ClientCertJWT: &gateway.CertJWT{
		Key: signer, KeyID: "k1", Issuer: "zkpresto-gateway", Audience: "trino", Lifetime: time.Minute,
	}}, c.Addr())
	certs, err := testtls.Generate(dir, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	serverTLS, err := certs.ServerTLS()
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	caPEM, err := os.ReadFile(certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs.AppendCertsFromPEM(caPEM)
	serverTLS.ClientAuth, serverTLS.ClientCAs = tls.VerifyClientCertIfGiven, clientCAs
	srv := gateway.NewServer(g, nil, gateway.ServerLimits{})
	srv.TLSConfig = serverTLS
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { srv.Close(); <-done })
	base := "https://" + ln.Addr().String()

	pair, err := tls.LoadX509KeyPair(certs.ClientCertFile, certs.ClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cert bool
	}{{"with a certificate", true}, {"without", false}} {
		t.Run(tc.name, func(t *testing.T) {
			clientTLS, err := certs.ClientTLS()
			if err != nil {
				t.Fatal(err)
			}
			if tc.cert {
				clientTLS.Certificates = []tls.Certificate{pair}
			}
			tr := &http.Transport{TLSClientConfig: clientTLS}
			defer tr.CloseIdleConnections()
			h := session("X-Trino-", "User", "alice")
			h.Set("Authorization", "Bearer the-clients-own")
			before := len(c.Calls())
			runWith(t, &http.Client{Transport: tr}, base, "SELECT 1", h)
			calls := c.Calls()[before:]
			if len(calls) < 2 {
				t.Fatalf("%d requests reached the coordinator", len(calls))
			}
			for _, call := range calls {
				auth := call.Identity.Values("Authorization")
				if !tc.cert {
					if len(auth) != 1 || auth[0] != "Bearer the-clients-own" {
						t.Fatalf("%s %s: Authorization %q, want the client's", call.Method, call.Path, auth)
					}
					continue
				}
				if len(auth) != 1 || !strings.HasPrefix(auth[0], "Bearer ") || auth[0] == "Bearer the-clients-own" {
					t.Fatalf("%s %s: Authorization %q, want the gateway's token alone", call.Method, call.Path, auth)
				}
				header, claims := verifyJWT(t, strings.TrimPrefix(auth[0], "Bearer "), &signer.(*rsa.PrivateKey).PublicKey)
				if header["alg"] != "RS256" || header["kid"] != "k1" || claims["sub"] != "zkpresto client" ||
					claims["iss"] != "zkpresto-gateway" || claims["aud"] != "trino" {
					t.Fatalf("header %v, claims %v", header, claims)
				}
				if exp := int64(claims["exp"].(float64)); exp < time.Now().Unix() || exp > time.Now().Add(2*time.Minute).Unix() {
					t.Fatalf("exp %d: want about a minute from now", exp)
				}
			}
		})
	}
}

// LoadSigningKey reads RSA and Ed25519 keys and refuses a file others
// may read, a small RSA key and what is not a private key, without
// quoting the file.
func TestLoadSigningKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode, block *pem.Block) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(block), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	edDER, _ := x509.MarshalPKCS8PrivateKey(edKey)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	if _, err := gateway.LoadSigningKey(write("ed.pem", 0o600, &pem.Block{Type: "PRIVATE KEY", Bytes: edDER})); err != nil {
		t.Fatalf("an Ed25519 key: %v", err)
	}
	for name, p := range map[string]string{
		"readable by others": write("open.pem", 0o644, &pem.Block{Type: "PRIVATE KEY", Bytes: edDER}),
		"a small RSA key":    write("small.pem", 0o600, &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(small)}),
		"a certificate":      write("cert.pem", 0o600, &pem.Block{Type: "CERTIFICATE", Bytes: []byte("x")}),
		"garbage":            write("bad.pem", 0o600, &pem.Block{Type: "PRIVATE KEY", Bytes: []byte("secret-bytes")}),
	} {
		_, err := gateway.LoadSigningKey(p)
		if err == nil {
			t.Errorf("%s: loaded", name)
		} else if strings.Contains(err.Error(), "secret-bytes") {
			t.Errorf("%s: the error quotes the file: %v", name, err)
		}
	}
}
