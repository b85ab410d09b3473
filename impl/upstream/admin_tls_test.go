package upstream_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	participantv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/admin/participant/v30"
	"github.com/validator-manager/validator-manager/impl/outbound"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// TestAdminTLS: over TLS the admin client verifies the participant's
// certificate against the configured roots and sends the bearer token; a
// certificate it does not trust, or plaintext to a TLS port, is a 502 and
// no call.
func TestAdminTLS(t *testing.T) {
	cert, roots := serverCertificate(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	participant := &statusServer{}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})))
	participantv30.RegisterParticipantStatusServiceServer(srv, participant)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"tok-tls","token_type":"Bearer","expires_in":3600}`))
	}))
	defer idp.Close()

	_, otherRoots := serverCertificate(t)
	policy := &outbound.Policy{Hosts: []string{"127.0.0.1"}}
	tests := []struct {
		name    string
		tls     *tls.Config
		wantErr bool
	}{
		{"trusted certificate", &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, false},
		{"untrusted certificate", &tls.Config{RootCAs: otherRoots, MinVersion: tls.VersionTLS12}, true},
		{"plaintext to a TLS port", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			participant.auth.Store("")
			res := resolverFunc(func(_ context.Context, name string) (upstream.Target, error) {
				return upstream.Target{Validator: name, AdminAddress: ln.Addr().String(), AdminTLS: tt.tls,
					Credentials: &upstream.Credentials{TokenURL: idp.URL, ClientID: "c", ClientSecret: "s"}}, nil
			})
			c := upstream.New(upstream.Options{Resolver: res, Timeout: 2 * time.Second, Transport: policy.Transport()})
			defer c.Close()
			n, err := c.For(t.Context(), "v1")
			if err != nil {
				t.Fatal(err)
			}
			a, err := n.Admin()
			if err == nil {
				_, err = a.Status.ParticipantStatus(t.Context(), &participantv30.ParticipantStatusRequest{})
			}
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("call over TLS: %v", err)
				}
				if got := participant.auth.Load(); got != "Bearer tok-tls" {
					t.Fatalf("authorization: got %q, want the bearer token", got)
				}
				return
			}
			if status, _, _ := outcome(err); status != http.StatusBadGateway {
				t.Fatalf("got %d (%v), want 502", status, err)
			}
			if got := participant.auth.Load(); got != "" {
				t.Fatalf("the participant received %q", got)
			}
		})
	}
}

// serverCertificate makes a self-signed certificate for 127.0.0.1 and the
// pool that trusts it.
func serverCertificate(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "participant"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(parsed)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}
