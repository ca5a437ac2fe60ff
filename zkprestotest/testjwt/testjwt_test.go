package testjwt

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"strings"
	"testing"
	"time"
)

// TestSignVerifiesWithThePublicKeyFile checks a token against the public
// key file, as a coordinator would: the signature over header.claims, the
// algorithm and the claims.
func TestSignVerifiesWithThePublicKeyFile(t *testing.T) {
	k, err := Generate(t.TempDir(), "issuer")
	if err != nil {
		t.Fatal(err)
	}
	token, err := k.Sign("alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("%d parts", len(parts))
	}
	data, err := os.ReadFile(k.PublicKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		t.Fatalf("public key file: %q", data)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		t.Fatal(err)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(pub.(*rsa.PublicKey), crypto.SHA256, digest[:], sig); err != nil {
		t.Fatalf("signature: %v", err)
	}
	var header map[string]string
	var claims map[string]any
	for i, v := range []any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	if header["alg"] != "RS256" || claims["sub"] != "alice" {
		t.Fatalf("header %v, claims %v", header, claims)
	}
	if exp := int64(claims["exp"].(float64)); exp <= time.Now().Unix() {
		t.Fatalf("expired at %d", exp)
	}
}
