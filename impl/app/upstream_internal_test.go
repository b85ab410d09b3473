package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/config"
)

func TestAdminTLSConfig(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, selfSignedPEM(t), 0o600); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		on        bool
		caFile    string
		wantTLS   bool
		wantRoots bool
		wantError string
	}{
		{"off: plaintext", false, "", false, false, ""},
		{"on: the system's roots", true, "", true, false, ""},
		{"on with a CA file", true, ca, true, true, ""},
		{"CA file without TLS", false, ca, false, false, "upstream.adminTls is not"},
		{"CA file missing", true, filepath.Join(dir, "none.pem"), false, false, "upstream.adminCaFile"},
		{"CA file without a certificate", true, junk, false, false, "holds no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.UpstreamAdminTLS, cfg.UpstreamAdminCAFile = tt.on, tt.caFile
			got, err := adminTLS(cfg)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("got %v, want an error naming %q", err, tt.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got != nil) != tt.wantTLS || (got != nil && (got.RootCAs != nil) != tt.wantRoots) {
				t.Fatalf("got %+v, want TLS %v with own roots %v", got, tt.wantTLS, tt.wantRoots)
			}
			if got != nil && got.MinVersion < 0x0303 {
				t.Errorf("minimum version %x, want TLS 1.2 at least", got.MinVersion)
			}
		})
	}
}

func selfSignedPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "admin CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
