package realserver

import (
	"crypto/pbkdf2"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// The password file holds one "user:iterations:salt:hash" line per user,
// in the PBKDF2 form both servers' EncryptionUtil read: the hash is
// PBKDF2-HMAC-SHA1 of the password with that salt, at least 1000
// iterations, in lower-case hex.
func TestPasswordFileIsWhatTheFileAuthenticatorReads(t *testing.T) {
	users := map[string]string{"alice": "pw;@:x", "bob": "other"}
	text, err := passwordFile(users)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines for 2 users: %q", len(lines), text)
	}
	for _, line := range lines {
		parts := strings.Split(line, ":")
		if len(parts) != 4 {
			t.Fatalf("line %q: want user:iterations:salt:hash", line)
		}
		iterations, err := strconv.Atoi(parts[1])
		if err != nil || iterations < 1000 {
			t.Fatalf("line %q: iterations %q, want at least 1000", line, parts[1])
		}
		salt, err1 := hex.DecodeString(parts[2])
		hash, err2 := hex.DecodeString(parts[3])
		if err1 != nil || err2 != nil || parts[2] != strings.ToLower(parts[2]) || parts[3] != strings.ToLower(parts[3]) {
			t.Fatalf("line %q: salt and hash must be lower-case hex", line)
		}
		want, err := pbkdf2.Key(sha1.New, users[parts[0]], salt, iterations, len(hash))
		if err != nil {
			t.Fatal(err)
		}
		if hex.EncodeToString(want) != parts[3] {
			t.Errorf("line %q: the hash is not PBKDF2-HMAC-SHA1 of %s's password", line, parts[0])
		}
	}
	for _, bad := range []map[string]string{{"a:b": "x"}, {"": "x"}, {"carol": ""}} {
		if _, err := passwordFile(bad); err == nil {
			t.Errorf("password file for %q: no error", bad)
		}
	}
}

// A cache fetched before the password-authenticators plugin was makes
// Start with Passwords say how to fetch it, before any server starts.
func TestPasswordsWithoutThePluginSayHowToFetch(t *testing.T) {
	fetched, err := findInstall(Cache(), coordinator.Trino)
	if err != nil {
		t.Fatal(err) // the servers are fetched wherever these tests run
	}
	cache := t.TempDir()
	dir := filepath.Join(cache, "trino-"+TrinoVersion)
	for name, content := range map[string]string{
		".complete": "plugins: tpch", "java-home": fetched.javaHome, "main-class": fetched.mainClass, "version": fetched.version,
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = Start(Options{Flavour: coordinator.Trino, Cache: cache, Passwords: map[string]string{"alice": "pw"}})
	if err == nil || !strings.Contains(err.Error(), passwordPlugin) || !strings.Contains(err.Error(), "scripts/fetch-real-servers.sh") {
		t.Fatalf("Start with Passwords from a cache without the plugin: %v; want the plugin named and the fetch script", err)
	}
}

// Options.JWT writes Trino's JWT authentication with the key file and a
// shared secret, and refuses what cannot work: PrestoDB, no https, with
// passwords, a relative key file, no token for the kit's own statements.
func TestJWTOptions(t *testing.T) {
	ks := "/keys/coordinator.pem"
	j := &JWT{KeyFile: "/keys/jwt.pub.pem", User: "alice", Token: "t"}
	config := map[string]string{}
	s := &Server{httpsPort: 8443}
	if err := s.secureEtc(Options{Flavour: coordinator.Trino, HTTPSKeyStore: ks, JWT: j}, "/etc", config, map[string]string{}); err != nil {
		t.Fatal(err)
	}
	if config["http-server.authentication.type"] != "JWT" || config["http-server.authentication.jwt.key-file"] != j.KeyFile ||
		len(config["internal-communication.shared-secret"]) != 64 || config["http-server.https.enabled"] != "true" {
		t.Fatalf("config %v", config)
	}
	for _, o := range []Options{
		{Flavour: coordinator.Presto, HTTPSKeyStore: ks, JWT: j},
		{Flavour: coordinator.Trino, JWT: j},
		{Flavour: coordinator.Trino, HTTPSKeyStore: ks, JWT: j, Passwords: map[string]string{"a": "b"}},
		{Flavour: coordinator.Trino, HTTPSKeyStore: ks, JWT: &JWT{KeyFile: "jwt.pem", User: "a", Token: "t"}},
		{Flavour: coordinator.Trino, HTTPSKeyStore: ks, JWT: &JWT{KeyFile: j.KeyFile}},
	} {
		if err := s.secureEtc(o, "/etc", map[string]string{}, map[string]string{}); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
