package engine

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/validator-manager/validator-manager/impl/atomicfile"
)

// The engine's PKI in <Dir>/pki: one CA, kept so that kubeconfigs written
// earlier stay valid, signs every certificate, renewed a month before expiry.

const (
	leafValidity = 365 * 24 * time.Hour
	renewBefore  = 30 * 24 * time.Hour
)

// pki is the folder of the files the children read.
type pki struct{ dir string }

func (p *pki) file(name string) string { return filepath.Join(p.dir, name) }

// serving is a serving certificate's names: loopback, and these.
func serving(names ...string) cert.AltNames {
	return cert.AltNames{
		DNSNames: append([]string{"localhost"}, names...),
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
}

func openPKI(dir string) (*pki, error) {
	if err := mkdirPrivate(dir); err != nil {
		return nil, err
	}
	p := &pki{dir: dir}
	ca, caKey, err := p.loadOrCreateCA()
	if err != nil {
		return nil, fmt.Errorf("certificate authority: %w", err)
	}
	server, client := x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth
	clients, masters := []x509.ExtKeyUsage{client}, []string{"system:masters"}
	leaves := []struct {
		name string // file stem: <name>.crt, <name>.key
		cert.Config
	}{
		// etcd's peer port presents its certificate as a client too.
		{"etcd", cert.Config{CommonName: "etcd", AltNames: serving("etcd"),
			Usages: []x509.ExtKeyUsage{server, client}}},
		{"apiserver-etcd-client", cert.Config{CommonName: "kube-apiserver-etcd-client", Usages: clients}},
		{"apiserver", cert.Config{CommonName: "kube-apiserver", Usages: []x509.ExtKeyUsage{server},
			AltNames: serving("kube-apiserver", "kubernetes", "kubernetes.default", "kubernetes.default.svc")}},
		{"admin", cert.Config{CommonName: "validator-manager-admin", Organization: masters, Usages: clients}},
		// Without per-controller service accounts the controller manager
		// needs the administrator group, as in kubeadm's single-identity setups.
		{"controller-manager", cert.Config{CommonName: "system:kube-controller-manager",
			Organization: masters, Usages: clients}},
		// The simulated node plays scheduler, kubelet and volume
		// provisioner at once: the rights of all three.
		{"node", cert.Config{CommonName: "nodesim", Organization: masters, Usages: clients}},
	}
	for _, l := range leaves {
		if err := p.ensureLeaf(l.name, l.Config, ca, caKey); err != nil {
			return nil, fmt.Errorf("certificate %s: %w", l.name, err)
		}
	}
	if err := ensureKey(p.file("sa.key"), p.file("sa.pub")); err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}
	return p, nil
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

// loadOrCreateCA reads ca.crt and ca.key, or makes them without a ca.crt.
func (p *pki) loadOrCreateCA() (*x509.Certificate, crypto.Signer, error) {
	certFile, keyFile := p.file("ca.crt"), p.file("ca.key")
	ca, err := readCert(certFile)
	if errors.Is(err, os.ErrNotExist) {
		key, err := newKey()
		if err != nil {
			return nil, nil, err
		}
		ca, err = cert.NewSelfSignedCACert(cert.Config{CommonName: "validator-manager-embedded-ca"}, key)
		if err != nil {
			return nil, nil, err
		}
		return ca, key, writePair(certFile, keyFile, ca.Raw, key)
	} else if err != nil {
		return nil, nil, err
	}
	// Errors of client-go's readers name the file.
	key, err := readKey(keyFile)
	return ca, key, err
}

// ensureLeaf keeps <name>.crt/.key when the CA signed them for the wanted
// subject and they are valid for more than renewBefore; else makes them.
func (p *pki) ensureLeaf(name string, l cert.Config, ca *x509.Certificate, caKey crypto.Signer) error {
	certFile, keyFile := p.file(name+".crt"), p.file(name+".key")
	if c, err := readCert(certFile); err == nil && c.CheckSignatureFrom(ca) == nil &&
		c.Subject.CommonName == l.CommonName && time.Until(c.NotAfter) > renewBefore {
		if _, err := readKey(keyFile); err == nil {
			return nil
		}
	}
	key, err := newKey()
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: l.CommonName, Organization: l.Organization},
		DNSNames:     l.AltNames.DNSNames,
		IPAddresses:  l.AltNames.IPs,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(leafValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  l.Usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return err
	}
	return writePair(certFile, keyFile, der, key)
}

// writePair writes the key, then the certificate: a crash between the two
// leaves no certificate, which the next start makes again.
func writePair(certFile, keyFile string, der []byte, key *ecdsa.PrivateKey) error {
	if err := writeKey(keyFile, key); err != nil {
		return err
	}
	block := &pem.Block{Type: cert.CertificateBlockType, Bytes: der}
	return atomicfile.Write(certFile, pem.EncodeToMemory(block), 0o600)
}

// ensureKey makes the key pair that signs and verifies service account tokens.
func ensureKey(keyFile, pubFile string) error {
	key, err := readKey(keyFile)
	if errors.Is(err, os.ErrNotExist) {
		k, err := newKey()
		if err != nil {
			return err
		}
		if err := writeKey(keyFile, k); err != nil {
			return err
		}
		key = k
	} else if err != nil {
		return err
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	block := &pem.Block{Type: keyutil.PublicKeyBlockType, Bytes: der}
	return atomicfile.Write(pubFile, pem.EncodeToMemory(block), 0o600)
}

func readCert(file string) (*x509.Certificate, error) {
	certs, err := cert.CertsFromFile(file)
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}

func readKey(file string) (crypto.Signer, error) {
	key, err := keyutil.PrivateKeyFromFile(file)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: %T is no signing key", file, key)
	}
	return signer, nil
}

func writeKey(file string, key *ecdsa.PrivateKey) error {
	b, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	return atomicfile.Write(file, b, 0o600)
}

// mkdirPrivate makes dir (and parents) and gives it mode 0700.
func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}
