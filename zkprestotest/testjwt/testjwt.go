// Package testjwt makes throwaway RSA keys and the JWTs they sign, for tests
// of access-token authentication: a Trino coordinator with
// http-server.authentication.type=JWT and
// http-server.authentication.jwt.key-file naming the public key file
// Generate writes takes the tokens Key.Sign makes, and refuses those of
// another key.
package testjwt

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Key is an RSA key pair whose public half is in a PEM file.
type Key struct {
	// PublicKeyFile holds the public key, PEM "PUBLIC KEY" (PKIX), as
	// Trino's http-server.authentication.jwt.key-file reads it.
	PublicKeyFile string
	// PrivateKeyFile holds the private key, PEM "PRIVATE KEY" (PKCS#8),
	// mode 0600, for a signer that reads a file (the gateway's
	// --jwt-signing-key).
	PrivateKeyFile string
	private        *rsa.PrivateKey
}

// Signer returns the private key.
func (k *Key) Signer() crypto.Signer { return k.private }

// Generate makes a 2048-bit RSA key and writes its public key into dir as
// name.pub.pem, its private key as name.key.pem.
func Generate(dir, name string) (*Key, error) {
	private, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("testjwt: key: %w", err)
	}
	der, err := x509.MarshalPKIXPublicKey(&private.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("testjwt: public key: %w", err)
	}
	file := filepath.Join(dir, name+".pub.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		return nil, fmt.Errorf("testjwt: %w", err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(private)
	if err != nil {
		return nil, fmt.Errorf("testjwt: private key: %w", err)
	}
	privFile := filepath.Join(dir, name+".key.pem")
	if err := os.WriteFile(privFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}), 0o600); err != nil {
		return nil, fmt.Errorf("testjwt: %w", err)
	}
	return &Key{PublicKeyFile: file, PrivateKeyFile: privFile, private: private}, nil
}

// Sign returns an RS256 JWT whose subject (sub, the principal Trino takes
// by default) is subject, issued now and expiring after ttl.
func (k *Key) Sign(subject string, ttl time.Duration) (string, error) {
	now := time.Now()
	header, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT"})
	if err != nil {
		return "", err
	}
	claims, err := json.Marshal(map[string]any{"sub": subject, "iat": now.Unix(), "exp": now.Add(ttl).Unix()})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, k.private, crypto.SHA256, digest[:])
	if err != nil {
		return "", fmt.Errorf("testjwt: signing: %w", err)
	}
	return signed + "." + enc.EncodeToString(sig), nil
}
