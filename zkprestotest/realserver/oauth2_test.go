package realserver

import (
	"strings"
	"testing"

	"github.com/zkpresto/zkpresto/zkprestotest/coordinator"
)

// Options.OAuth2 the kit cannot start are refused before anything starts,
// with errors that never carry the client secret.
func TestOAuth2OptionsRefused(t *testing.T) {
	const secret = "s3cret-canary"
	good := func() *OAuth2 {
		return &OAuth2{Issuer: "http://127.0.0.1:1/oidc", ClientID: "trino", ClientSecret: secret}
	}
	for _, c := range []struct {
		name string
		opts Options
		want string
	}{
		{"presto", Options{Flavour: coordinator.Presto, HTTPSKeyStore: "/ks.pem", OAuth2: good()}, "Trino's only"},
		{"no https", Options{Flavour: coordinator.Trino, OAuth2: good()}, "HTTPSKeyStore"},
		{"with passwords", Options{Flavour: coordinator.Trino, HTTPSKeyStore: "/ks.pem", OAuth2: good(), Passwords: map[string]string{"a": "b"}}, "one authenticator"},
		{"issuer", Options{Flavour: coordinator.Trino, HTTPSKeyStore: "/ks.pem", OAuth2: &OAuth2{Issuer: "127.0.0.1/oidc", ClientID: "trino", ClientSecret: secret}}, "Issuer"},
		{"no secret", Options{Flavour: coordinator.Trino, HTTPSKeyStore: "/ks.pem", OAuth2: &OAuth2{Issuer: "http://127.0.0.1:1/oidc", ClientID: "trino"}}, "ClientSecret"},
		{"scope", Options{Flavour: coordinator.Trino, HTTPSKeyStore: "/ks.pem", OAuth2: &OAuth2{Issuer: "http://127.0.0.1:1/oidc", ClientID: "trino", ClientSecret: secret, Scopes: []string{"openid email"}}}, "scope"},
	} {
		_, err := Start(c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error naming %q", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error carries the client secret: %v", c.name, err)
		}
	}
}

// Options.OAuth2 becomes Trino's OAuth2 properties with OpenID Connect
// discovery, the openid scope and the subject by default, the internal
// shared secret, and http left to the kit's own statements.
func TestOAuth2Config(t *testing.T) {
	s := &Server{httpsPort: 8443}
	config, files := map[string]string{}, map[string]string{}
	opts := Options{Flavour: coordinator.Trino, Name: "c", HTTPSKeyStore: "/ks.pem",
		OAuth2: &OAuth2{Issuer: "http://127.0.0.1:1/oidc", ClientID: "trino", ClientSecret: "secret"}}
	if err := s.secureEtc(opts, "/etc", config, files); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"http-server.authentication.type":                     "OAUTH2",
		"http-server.authentication.oauth2.issuer":            "http://127.0.0.1:1/oidc",
		"http-server.authentication.oauth2.oidc.discovery":    "true",
		"http-server.authentication.oauth2.client-id":         "trino",
		"http-server.authentication.oauth2.client-secret":     "secret",
		"http-server.authentication.oauth2.scopes":            "openid",
		"http-server.authentication.oauth2.principal-field":   "sub",
		"http-server.authentication.allow-insecure-over-http": "true",
		"http-server.https.enabled":                           "true",
	} {
		if config[k] != want {
			t.Errorf("%s = %q, want %q", k, config[k], want)
		}
	}
	if len(config["internal-communication.shared-secret"]) != 64 {
		t.Errorf("internal-communication.shared-secret %q: want 32 random bytes in hex", config["internal-communication.shared-secret"])
	}
}
