package realserver

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// passwordFileName is the file authenticator's password file, under etc.
const passwordFileName = "password.db"

// The file authenticator's PBKDF2 hashes: both servers' EncryptionUtil
// refuse fewer than 1000 iterations and derive with PBKDF2WithHmacSHA1 (the
// current PrestoDB tries PBKDF2WithHmacSHA256 first, then SHA-1), the hash as
// long as the one written.
const (
	pbkdf2Iterations = 1000
	pbkdf2SaltBytes  = 16
	pbkdf2HashBytes  = 32
)

// secureEtc adds to config and files what Options.HTTPSKeyStore and
// Options.Passwords ask for, before Options.Config and Options.Files, which
// may replace any of it.
func (s *Server) secureEtc(opts Options, etc string, config, files map[string]string) error {
	if opts.HTTPSKeyStore != "" {
		if !filepath.IsAbs(opts.HTTPSKeyStore) {
			return fmt.Errorf("realserver: %s: HTTPSKeyStore %q must be an absolute path", opts.Name, opts.HTTPSKeyStore)
		}
		// Airlift's HttpServer reads a PEM file holding the private key
		// and the certificate as a key store (PemReader, in Trino's airlift
		// and in PrestoDB's com.facebook.airlift 0.209 alike).
		config["http-server.https.enabled"] = "true"
		config["http-server.https.port"] = strconv.Itoa(s.httpsPort)
		config["http-server.https.keystore.path"] = opts.HTTPSKeyStore
	}
	if opts.JWT != nil {
		return s.jwtEtc(opts, config)
	}
	if opts.OAuth2 != nil {
		oauth2Etc(opts.OAuth2, config)
		return sharedSecret(opts, config)
	}
	if len(opts.Passwords) == 0 {
		return nil
	}
	db, err := passwordFile(opts.Passwords)
	if err != nil {
		return fmt.Errorf("realserver: %s: %w", opts.Name, err)
	}
	// Both read etc/password-authenticator.properties relative to their
	// working directory, the server's directory here (trino
	// PasswordAuthenticatorConfig's default, PrestoDB
	// PasswordAuthenticatorManager.CONFIG_FILE).
	files["password-authenticator.properties"] = "password-authenticator.name=file\n" +
		"file.password-file=" + filepath.Join(etc, passwordFileName) + "\n"
	files[passwordFileName] = db
	config["http-server.authentication.type"] = "PASSWORD"
	return sharedSecret(opts, config)
}

// sharedSecret gives a Trino coordinator with authentication a random
// internal-communication.shared-secret: Trino refuses to start with
// authentication and no secret for its internal requests
// (ServerSecurityModule).
func sharedSecret(opts Options, config map[string]string) error {
	if opts.Flavour != coordinator.Trino {
		return nil
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return fmt.Errorf("realserver: %s: %w", opts.Name, err)
	}
	config["internal-communication.shared-secret"] = hex.EncodeToString(secret)
	return nil
}

// jwtEtc turns on Options.JWT: Trino's JwtAuthenticator takes a bearer
// token signed by the key file's key, its principal the token's sub
// (http-server.authentication.jwt.principal-field's default).
func (s *Server) jwtEtc(opts Options, config map[string]string) error {
	j := opts.JWT
	switch {
	case opts.Flavour != coordinator.Trino:
		return fmt.Errorf("realserver: %s: JWT authentication is Trino's (PrestoDB 0.287 has none)", opts.Name)
	case opts.HTTPSKeyStore == "":
		return fmt.Errorf("realserver: %s: JWT needs HTTPSKeyStore: Trino checks tokens on https only", opts.Name)
	case len(opts.Passwords) > 0 || opts.OAuth2 != nil:
		return fmt.Errorf("realserver: %s: JWT beside Passwords or OAuth2: keep one", opts.Name)
	case !filepath.IsAbs(j.KeyFile):
		return fmt.Errorf("realserver: %s: JWT.KeyFile %q must be an absolute path", opts.Name, j.KeyFile)
	case j.User == "" || j.Token == "":
		return fmt.Errorf("realserver: %s: JWT needs the User and Token the kit's own statements run with", opts.Name)
	}
	config["http-server.authentication.type"] = "JWT"
	config["http-server.authentication.jwt.key-file"] = j.KeyFile
	return sharedSecret(opts, config)
}

// passwordFile returns the lines of a file authenticator's password file,
// "user:hash", the hash PBKDF2's "iterations:salt:hash" in lower-case hex
// (trino plugin/trino-password-authenticators EncryptionUtil, PrestoDB
// presto-password-authenticators EncryptionUtil).
func passwordFile(users map[string]string) (string, error) {
	names := make([]string, 0, len(users))
	for u := range users {
		names = append(names, u)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, u := range names {
		if u == "" || strings.ContainsAny(u, ":\n") {
			return "", fmt.Errorf("password file: user %q: a name must be non-empty, without ':' or a line break", u)
		}
		if users[u] == "" {
			return "", fmt.Errorf("password file: user %q has an empty password", u)
		}
		salt := make([]byte, pbkdf2SaltBytes)
		if _, err := rand.Read(salt); err != nil {
			return "", err
		}
		hash, err := pbkdf2.Key(sha1.New, users[u], salt, pbkdf2Iterations, pbkdf2HashBytes)
		if err != nil {
			return "", fmt.Errorf("password file: user %q: %w", u, err)
		}
		fmt.Fprintf(&b, "%s:%d:%s:%s\n", u, pbkdf2Iterations, hex.EncodeToString(salt), hex.EncodeToString(hash))
	}
	return b.String(), nil
}

// HTTPSURL is the server's https base URL, https://127.0.0.1:port, or ""
// when it was started without Options.HTTPSKeyStore.
func (s *Server) HTTPSURL() string {
	if s.httpsPort == 0 {
		return ""
	}
	return "https://" + s.HTTPSAddr()
}

// HTTPSAddr is the host:port of the server's https port, or "" (see
// HTTPSURL).
func (s *Server) HTTPSAddr() string {
	if s.httpsPort == 0 {
		return ""
	}
	return "127.0.0.1:" + strconv.Itoa(s.httpsPort)
}

// passwordPlugin is the plugin directory of the file authenticator, which
// scripts/fetch-real-servers.sh fetches beside the connectors.
const passwordPlugin = "password-authenticators"

// checkPasswordPlugin says how to fetch the file authenticator when a
// cache filled before it was fetched lacks it: the server would otherwise
// fail to start with a message of its own.
func checkPasswordPlugin(in install, opts Options) error {
	if len(opts.Passwords) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(in.dir, "plugin", passwordPlugin)); err != nil {
		return fmt.Errorf("realserver: %s: %s has no %s plugin (Options.Passwords needs it): run scripts/fetch-real-servers.sh again", opts.Name, in.dir, passwordPlugin)
	}
	return nil
}

// newChecker returns how the kit's own statements reach a server with
// Options.Passwords or JWT and HTTPSKeyStore: over https, trusting the key
// store's certificate, as the first user in name order (JWT: as its User,
// with its Token). Trino refuses
// authentication over http once https is on (ServerSecurityModule sets
// http-server.authentication.allow-insecure-over-http to false, and
// AuthenticationFilter answers 403), so http would not do. Nil otherwise.
func newChecker(opts Options) (*checker, error) {
	if (len(opts.Passwords) == 0 && opts.JWT == nil) || opts.HTTPSKeyStore == "" {
		return nil, nil
	}
	data, err := os.ReadFile(opts.HTTPSKeyStore)
	if err != nil {
		return nil, fmt.Errorf("realserver: %s: HTTPSKeyStore: %w", opts.Name, err)
	}
	roots, certs := x509.NewCertPool(), 0
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("realserver: %s: HTTPSKeyStore %s: %w", opts.Name, opts.HTTPSKeyStore, err)
		}
		// Go trusts a certificate in RootCAs itself, the server's leaf
		// included: the kit needs no CA file.
		roots.AddCert(cert)
		certs++
	}
	if certs == 0 {
		return nil, fmt.Errorf("realserver: %s: HTTPSKeyStore %s holds no certificate", opts.Name, opts.HTTPSKeyStore)
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
	if opts.JWT != nil {
		return &checker{client: &http.Client{Transport: transport}, user: opts.JWT.User, token: opts.JWT.Token}, nil
	}
	names := make([]string, 0, len(opts.Passwords))
	for u := range opts.Passwords {
		names = append(names, u)
	}
	sort.Strings(names)
	return &checker{client: &http.Client{Transport: transport}, user: names[0], password: opts.Passwords[names[0]]}, nil
}
