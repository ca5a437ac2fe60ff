package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	zkdriver "github.com/zkpresto/zkpresto/driver"
)

// clientFlags are the flags of trino-cli and presto-cli for TLS,
// authentication, network logging and completion. Each maps to what the
// driver does, or fails saying what is not supported and what to use
// instead: a user who types one never meets a bare "unknown flag".
type clientFlags struct {
	insecure           bool
	truststorePath     string
	truststorePassword string
	keystorePath       string
	keystorePassword   string
	accessToken        string
	roles              []string
	extraCredentials   []string
	networkLogging     string
	// disableAutoSuggestion turns the shell's tab completion off.
	disableAutoSuggestion bool
}

// register adds the flags to f.
func (c *clientFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&c.insecure, "insecure", false, "TLS without verifying the coordinators' certificates (DSN key ssl_skip_verify); for debugging only")
	f.StringVar(&c.truststorePath, "truststore-path", "", "a PEM file of CA certificates to trust (DSN key ssl_ca); Java key stores (JKS, PKCS12) are not read")
	f.StringVar(&c.truststorePassword, "truststore-password", "", "accepted with --truststore-path; a PEM file needs none")
	f.StringVar(&c.keystorePath, "keystore-path", "", "a PEM file with the client certificate and its key (DSN keys ssl_cert and ssl_key); Java key stores are not read")
	f.StringVar(&c.keystorePassword, "keystore-password", "", "accepted with --keystore-path; an encrypted key is refused")
	f.StringVar(&c.accessToken, "access-token", "", "a bearer token (JWT) for the coordinators, over https only (DSN key accessToken)")
	f.StringArrayVar(&c.roles, "role", nil, "catalog=role: the role to enable in a catalog, ALL or NONE (repeatable; DSN key roles)")
	f.StringArrayVar(&c.extraCredentials, "extra-credential", nil, "name=value: a credential for connectors (repeatable; DSN key extraCredentials)")
	f.StringVar(&c.networkLogging, "network-logging", "NONE", "NONE, or BASIC for the driver's debug logs (as --log-level debug); HEADERS and BODY are not logged")
	f.BoolVar(&c.disableAutoSuggestion, "disable-auto-suggestion", false, "the shell: no tab completion of keywords, catalogs, schemas and tables")
}

// logsRequests reports whether --network-logging asks for the driver's
// debug logs.
func (c clientFlags) logsRequests() bool {
	return strings.EqualFold(c.networkLogging, "BASIC")
}

// usesTLS reports whether a TLS flag was given.
func (c clientFlags) usesTLS() bool {
	return c.insecure || c.truststorePath != "" || c.keystorePath != ""
}

// apply checks the flags and sets cfg's TLS keys from them, over the
// DSN's. server is --server's value ("" without): https:// there asks for
// TLS with the system's CA certificates. Its errors never quote a
// password or a token.
func (c clientFlags) apply(cfg *zkdriver.Config, server string) error {
	if err := c.applyAuth(cfg); err != nil {
		return err
	}
	switch strings.ToUpper(c.networkLogging) {
	case "", "NONE", "BASIC":
	case "HEADERS", "BODY":
		return fmt.Errorf("--network-logging %s: not supported: headers and bodies carry credentials and are not logged; use --network-logging BASIC (the driver's debug logs)", strings.ToUpper(c.networkLogging))
	default:
		return fmt.Errorf("--network-logging %q: want NONE, BASIC, HEADERS or BODY", c.networkLogging)
	}
	if c.truststorePassword != "" && c.truststorePath == "" {
		return errors.New("--truststore-password needs --truststore-path")
	}
	if c.keystorePassword != "" && c.keystorePath == "" {
		return errors.New("--keystore-password needs --keystore-path")
	}
	scheme, _, hasScheme := strings.Cut(server, "://")
	if hasScheme && strings.EqualFold(scheme, "http") && c.usesTLS() {
		return fmt.Errorf("--server %q: the TLS flags (--insecure, --truststore-path, --keystore-path) want https://", server)
	}
	if hasScheme && strings.EqualFold(scheme, "https") {
		cfg.SSL = true
	}
	if c.truststorePath != "" {
		if _, err := readPEM("--truststore-path", c.truststorePath, "CERTIFICATE",
			"export its CA certificates to PEM (keytool -exportcert -rfc -keystore FILE -alias ALIAS) and give that file, or the DSN's ssl_ca"); err != nil {
			return err
		}
		cfg.SSLCA = c.truststorePath
	}
	if c.keystorePath != "" {
		b, err := readPEM("--keystore-path", c.keystorePath, "PRIVATE KEY",
			"export the certificate and its key to PEM (openssl pkcs12 -in FILE -nodes) and give that file, or the DSN's ssl_cert and ssl_key")
		if err != nil {
			return err
		}
		if !bytes.Contains(b, []byte("CERTIFICATE-----")) {
			return fmt.Errorf("--keystore-path %q: no certificate in the file: want the client certificate and its key, both PEM", c.keystorePath)
		}
		if bytes.Contains(b, []byte("ENCRYPTED PRIVATE KEY-----")) || bytes.Contains(b, []byte("Proc-Type: 4,ENCRYPTED")) {
			return fmt.Errorf("--keystore-path %q: the key is encrypted, which is not supported: decrypt it (openssl pkey -in FILE) and give the file without --keystore-password", c.keystorePath)
		}
		// crypto/tls finds the certificate and the key in one file.
		cfg.SSLCert, cfg.SSLKey = c.keystorePath, c.keystorePath
	}
	if c.insecure {
		cfg.SSLSkipVerify = true
	}
	return nil
}

// applyAuth sets cfg's access token, roles and extra credentials from
// the flags, over the DSN's, in trino-cli's name=value form. Its errors
// never quote a value: roles aside, they are secrets.
func (c clientFlags) applyAuth(cfg *zkdriver.Config) error {
	if c.accessToken != "" {
		cfg.AccessToken = c.accessToken
	}
	roles, err := nameValues("--role", "catalog=role", c.roles)
	if err != nil {
		return err
	}
	creds, err := nameValues("--extra-credential", "name=value", c.extraCredentials)
	if err != nil {
		return err
	}
	if roles != nil {
		cfg.Roles = roles
	}
	if creds != nil {
		cfg.ExtraCredentials = creds
	}
	return nil
}

// nameValues reads a repeated name=value flag; nil when it was not given.
func nameValues(flag, form string, values []string) (map[string]string, error) {
	var m map[string]string
	for i, v := range values {
		name, value, ok := strings.Cut(v, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("%s (the %d. one, not shown): want %s", flag, i+1, form)
		}
		if m == nil {
			m = make(map[string]string)
		}
		m[name] = value
	}
	return m, nil
}

// readPEM reads a file a flag names, which must be PEM holding a block of
// the kind want: a Java key store (JKS or PKCS12) cannot be read by
// crypto/tls, and the error says how to convert it.
func readPEM(flag, path, want, convert string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if !bytes.Contains(b, []byte("-----BEGIN ")) {
		return nil, fmt.Errorf("%s %q: not a PEM file; a Java key store (JKS or PKCS12) cannot be read: %s", flag, path, convert)
	}
	if !bytes.Contains(b, []byte(want+"-----")) {
		return nil, fmt.Errorf("%s %q: no %s in the PEM file", flag, path, strings.ToLower(want))
	}
	return b, nil
}
