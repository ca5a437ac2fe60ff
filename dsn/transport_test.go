package dsn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	presto "github.com/prestodb/presto-go-client/v2"

	"github.com/zkpresto/zkpresto/zkprestotest/testtls"
)

// TestTLSConfigAsThePrestoClientBuildsIt checks that the ssl_* files give
// the coordinator transport what the Presto Go client's BuildTLSConfig
// gives, errors included.
func TestTLSConfigAsThePrestoClientBuildsIt(t *testing.T) {
	dir := t.TempDir()
	certs, err := testtls.Generate(dir, "dsn")
	if err != nil {
		t.Fatal(err)
	}
	ca, certFile, keyFile := certs.CAFile, certs.ClientCertFile, certs.ClientKeyFile
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		name                 string
		ca, cert, key        string
		skipVerify, wantFail bool
	}{
		{"no files", "", "", "", false, false},
		{"skip verify", "", "", "", true, false},
		{"CA", ca, "", "", false, false},
		{"client certificate", "", certFile, keyFile, false, false},
		{"certificate without its key", "", certFile, "", false, false},
		{"all", ca, certFile, keyFile, true, false},
		{"missing CA", missing, "", "", false, true},
		{"CA not PEM", notPEM, "", "", false, true},
		{"missing key", "", certFile, missing, false, true},
		{"key not PEM", "", certFile, notPEM, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := buildTLSConfig(tc.ca, tc.cert, tc.key, tc.skipVerify)
			want, wantErr := presto.BuildTLSConfig(tc.ca, tc.cert, tc.key, tc.skipVerify)
			if (err != nil) != tc.wantFail || (wantErr != nil) != tc.wantFail {
				t.Fatalf("error %v, the Presto client's %v; want failure %v", err, wantErr, tc.wantFail)
			}
			if tc.wantFail {
				if err.Error() != wantErr.Error() {
					t.Errorf("error %q, the Presto client's %q", err, wantErr)
				}
				return
			}
			if got.InsecureSkipVerify != want.InsecureSkipVerify {
				t.Errorf("InsecureSkipVerify %v, want %v", got.InsecureSkipVerify, want.InsecureSkipVerify)
			}
			if (got.RootCAs == nil) != (want.RootCAs == nil) || got.RootCAs != nil && !got.RootCAs.Equal(want.RootCAs) {
				t.Errorf("RootCAs differ from the Presto client's")
			}
			if len(got.Certificates) != len(want.Certificates) {
				t.Fatalf("%d client certificates, want %d", len(got.Certificates), len(want.Certificates))
			}
			for i := range got.Certificates {
				if !got.Certificates[i].Leaf.Equal(want.Certificates[i].Leaf) {
					t.Errorf("client certificate %d differs", i)
				}
			}
		})
	}
}

// TestNewTransportAppliesTheDSN checks the transport's TLS settings and
// that a Config without ssl_* keys reads no TLS file.
func TestNewTransportAppliesTheDSN(t *testing.T) {
	certs, err := testtls.Generate(t.TempDir(), "dsn")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := certs.ClientCertFile, certs.ClientKeyFile
	cfg, err := ParseDSN("presto://c1:8443?ssl_ca=" + certs.CAFile + "&ssl_cert=" + certFile + "&ssl_key=" + keyFile)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cfg.NewTransport(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.CloseIdleConnections()
	if tc := tr.TLSClientConfig; tc == nil || tc.RootCAs == nil || len(tc.Certificates) != 1 || tc.InsecureSkipVerify {
		t.Errorf("TLS config %+v: want the CA and the client certificate, verifying", tc)
	}
	plain, err := ParseDSN("presto://c1:8080")
	if err != nil {
		t.Fatal(err)
	}
	pt, err := plain.NewTransport(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pt.CloseIdleConnections()
	if pt.TLSClientConfig != nil && (pt.TLSClientConfig.RootCAs != nil || len(pt.TLSClientConfig.Certificates) > 0) {
		t.Errorf("a DSN without ssl_* keys gives TLS config %+v", pt.TLSClientConfig)
	}
	if pt.DialContext == nil {
		t.Error("no dialer of the DSN's time limits")
	}
	bad := plain.Clone()
	bad.SSLCert, bad.SSLKey = certFile, certFile // a certificate is no key
	if _, err := bad.NewTransport(nil); err == nil || !strings.HasPrefix(err.Error(), "dsn: TLS settings: failed to load client certificate") {
		t.Errorf("a certificate as the key: %v", err)
	}
}
