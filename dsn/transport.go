package dsn

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/zkpresto/zkpresto/internal/pool"
)

// UsesTLS reports whether c asks for https to every coordinator: the
// Presto client's rule, any ssl_* key means https, plus SSL=true.
func (c *Config) UsesTLS() bool {
	return c.SSL || c.SSLCert != "" || c.SSLKey != "" || c.SSLCA != "" || c.SSLSkipVerify
}

// DialRace returns the dialRaceDelay in effect: DialRaceDelay, or its
// default when zero; 0 when it is DialTimeout (or its default) or more,
// which turns the race off.
func (c *Config) DialRace() time.Duration {
	race := orDefault(c.DialRaceDelay, defaultDialRaceDelay)
	if race >= orDefault(c.DialTimeout, defaultDialTimeout) {
		return 0
	}
	return race
}

// NewTransport returns the HTTP transport to the coordinators that c
// describes: its dial, write and response time limits, and its TLS keys.
// onDialFailure, when not nil, hears of every failed dial, even one that
// ends after the request that asked for it (see pool.Dialer). It does
// no network I/O; it reads the TLS files. The dial race (dialRaceDelay)
// runs only for the driver's statements, which Open's Routing serves.
func (c *Config) NewTransport(onDialFailure func(addr string, err error)) (*http.Transport, error) {
	t, _, err := c.newTransport(onDialFailure)
	return t, err
}

// newTransport is NewTransport, with the transport's dialer, whose spares
// (connections that lost a dial race) close with it.
func (c *Config) newTransport(onDialFailure func(addr string, err error)) (*http.Transport, *pool.Dialer, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	t.IdleConnTimeout = 90 * time.Second
	d := &pool.Dialer{
		Timeout:      orDefault(c.DialTimeout, defaultDialTimeout),
		WriteTimeout: orDefault(c.WriteTimeout, defaultWriteTimeout),
		// Presto answers a submission at once (with a queued state) and a
		// GET of a nextUri within about a second (its long poll), so an
		// answer that takes much longer means the coordinator stopped
		// answering. On the connection, not the transport's
		// ResponseHeaderTimeout, which costs a timer per request.
		ResponseTimeout: orDefault(c.ResponseTimeout, defaultResponseTimeout),
		OnFailure:       onDialFailure,
	}
	t.DialContext = d.DialContext
	if c.UsesTLS() {
		tlsCfg, err := buildTLSConfig(c.SSLCA, c.SSLCert, c.SSLKey, c.SSLSkipVerify)
		if err != nil {
			return nil, nil, fmt.Errorf("dsn: TLS settings: %w", err)
		}
		t.TLSClientConfig = tlsCfg
	}
	return t, d, nil
}

// buildTLSConfig reads the ssl_* files as the Presto Go client's
// BuildTLSConfig does (presto-go-client/v2 driver.go), with its messages,
// so that the coordinator transport needs no Presto client: a client
// certificate when both files are given, the CA file's certificates
// instead of the system's.
func buildTLSConfig(caFile, certFile, keyFile string, skipVerify bool) (*tls.Config, error) {
	cfg := &tls.Config{InsecureSkipVerify: skipVerify}
	if certFile != "" && keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("failed to load client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("failed to read CA certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("failed to parse CA certificate from %s", caFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// orDefault returns d, or def when d is zero (a hand-built Config's
// default).
func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
