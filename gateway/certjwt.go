package gateway

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"
)

// CertJWT makes the gateway authenticate the clients that present a TLS
// client certificate (verified against the listener's client CAs) and
// hand the coordinators a short-lived JWT it signs for them, in place of
// any Authorization the client sent: a client certificate proves itself to
// the gateway, where TLS ends, and would never reach a coordinator. The
// coordinators trust the token with Trino's JWT authentication
// (http-server.authentication.type=JWT,
// http-server.authentication.jwt.key-file naming the public key of Key;
// required-issuer and required-audience set to Issuer and Audience).
// Every request of a statement gets a token, so no state is shared: the
// replicas share the key. A client without a certificate passes through
// as without CertJWT. See docs/gateway-operations.md.
type CertJWT struct {
	// Key signs the tokens: an *rsa.PrivateKey (RS256) or an
	// ed25519.PrivateKey (EdDSA). LoadSigningKey reads one from a file.
	Key crypto.Signer
	// KeyID, when set, is the tokens' kid, for coordinators that hold
	// several keys while one is rolled.
	KeyID string
	// Issuer and Audience, when set, are the tokens' iss and aud.
	Issuer, Audience string
	// Lifetime is how long a token is good for; default 5 minutes. A
	// token is reused for a principal until less than half of it is left.
	Lifetime time.Duration
	// Principal maps a client's certificate to the token's subject, the
	// user the coordinators see; nil takes the subject's common name. An
	// error or an empty principal refuses the request's credentials: it
	// goes on without Authorization.
	Principal func(*x509.Certificate) (string, error)
}

// DefaultJWTLifetime is CertJWT.Lifetime's default.
const DefaultJWTLifetime = 5 * time.Minute

// LoadSigningKey reads a PEM private key (PKCS#8, or PKCS#1 for RSA) for
// CertJWT.Key: RSA of at least 2048 bits or Ed25519. A file that others
// than its owner may read is refused. Errors never quote the file.
func LoadSigningKey(path string) (crypto.Signer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("gateway: JWT signing key: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("gateway: JWT signing key %s: readable by others than its owner (mode %v): chmod 600 it", path, st.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("gateway: JWT signing key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("gateway: JWT signing key %s: no PEM block", path)
	}
	var key any
	switch block.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("gateway: JWT signing key %s: a PEM %q block, want PRIVATE KEY or RSA PRIVATE KEY", path, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("gateway: JWT signing key %s: not a private key that can be read", path)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("gateway: JWT signing key %s: not a signing key", path)
	}
	if _, err := jwtAlgorithm(signer); err != nil {
		return nil, fmt.Errorf("gateway: JWT signing key %s: %w", path, err)
	}
	return signer, nil
}

// jwtAlgorithm is the JWS alg of key, or why it cannot sign tokens.
func jwtAlgorithm(key crypto.Signer) (string, error) {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return "", fmt.Errorf("an RSA key of %d bits, want at least 2048", k.N.BitLen())
		}
		return "RS256", nil
	case ed25519.PrivateKey:
		return "EdDSA", nil
	}
	return "", fmt.Errorf("a %T, want RSA or Ed25519", key)
}

// certMinter signs and caches CertJWT's tokens.
type certMinter struct {
	cfg    CertJWT
	alg    string
	header string // the encoded JOSE header, the same for every token
	now    func() time.Time

	mu     sync.Mutex
	tokens map[string]mintedToken // by principal
}

type mintedToken struct {
	token   string
	renewAt time.Time
}

// maxMintedPrincipals bounds the cache: past it, it is emptied.
const maxMintedPrincipals = 10000

func newCertMinter(cfg CertJWT) (*certMinter, error) {
	if cfg.Key == nil {
		return nil, errors.New("gateway: CertJWT: no signing key")
	}
	alg, err := jwtAlgorithm(cfg.Key)
	if err != nil {
		return nil, fmt.Errorf("gateway: CertJWT: %w", err)
	}
	if cfg.Lifetime == 0 {
		cfg.Lifetime = DefaultJWTLifetime
	}
	if cfg.Lifetime < 10*time.Second {
		return nil, fmt.Errorf("gateway: CertJWT: a lifetime of %v is shorter than a request may take (want 10s or more)", cfg.Lifetime)
	}
	if cfg.Principal == nil {
		cfg.Principal = func(c *x509.Certificate) (string, error) { return c.Subject.CommonName, nil }
	}
	h := map[string]string{"alg": alg, "typ": "JWT"}
	if cfg.KeyID != "" {
		h["kid"] = cfg.KeyID
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return &certMinter{cfg: cfg, alg: alg, header: base64.RawURLEncoding.EncodeToString(hb), now: time.Now, tokens: map[string]mintedToken{}}, nil
}

// authorize sets h's Authorization for a client on r's connection: the
// gateway's token when the client presented a verified certificate (the
// client's own Authorization is dropped; without a principal, or when
// signing fails, the request goes on without any), h unchanged otherwise.
func (m *certMinter) authorize(r *http.Request, h http.Header) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return
	}
	delete(h, "Authorization")
	principal, err := m.cfg.Principal(r.TLS.VerifiedChains[0][0])
	if err != nil || principal == "" {
		return
	}
	token, err := m.token(principal)
	if err != nil {
		return
	}
	h["Authorization"] = []string{"Bearer " + token}
}

// token returns a token for principal, a cached one while more than half
// of its lifetime is left.
func (m *certMinter) token(principal string) (string, error) {
	now := m.now()
	m.mu.Lock()
	if t, ok := m.tokens[principal]; ok && now.Before(t.renewAt) {
		m.mu.Unlock()
		return t.token, nil
	}
	m.mu.Unlock()
	claims := map[string]any{"sub": principal, "iat": now.Unix(), "nbf": now.Add(-30 * time.Second).Unix(), "exp": now.Add(m.cfg.Lifetime).Unix()}
	if m.cfg.Issuer != "" {
		claims["iss"] = m.cfg.Issuer
	}
	if m.cfg.Audience != "" {
		claims["aud"] = m.cfg.Audience
	}
	cb, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := m.header + "." + base64.RawURLEncoding.EncodeToString(cb)
	var sig []byte
	if m.alg == "RS256" {
		digest := sha256.Sum256([]byte(signed))
		sig, err = m.cfg.Key.Sign(rand.Reader, digest[:], crypto.SHA256)
	} else {
		sig, err = m.cfg.Key.Sign(rand.Reader, []byte(signed), crypto.Hash(0))
	}
	if err != nil {
		return "", err
	}
	token := signed + "." + base64.RawURLEncoding.EncodeToString(sig)
	m.mu.Lock()
	if len(m.tokens) >= maxMintedPrincipals {
		clear(m.tokens)
	}
	m.tokens[principal] = mintedToken{token: token, renewAt: now.Add(m.cfg.Lifetime / 2)}
	m.mu.Unlock()
	return token, nil
}
