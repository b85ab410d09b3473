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

	"github.com/validator-manager/validator-manager/impl/atomicfile"
)

// The engine's PKI lives in <Dir>/pki and is made once: one CA signs the
// serving certificates (etcd, kube-apiserver) and the client certificates
// (kube-apiserver to etcd, the administrator, kube-controller-manager, the
// simulated node).
// Leaf certificates are renewed when less than a month of validity is left;
// the CA (ten years) is kept, so kubeconfigs written earlier stay valid.

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	renewBefore  = 30 * 24 * time.Hour
)

type ca struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// pki is the set of files the children read.
type pki struct {
	dir string
	ca  *ca
}

func (p *pki) file(name string) string { return filepath.Join(p.dir, name) }

// leaf describes one certificate the CA signs.
type leaf struct {
	name   string // file stem: <name>.crt, <name>.key
	cn     string
	orgs   []string
	server bool
	client bool
}

func openPKI(dir string) (*pki, error) {
	if err := mkdirPrivate(dir); err != nil {
		return nil, err
	}
	p := &pki{dir: dir}
	c, err := loadOrCreateCA(p.file("ca.crt"), p.file("ca.key"))
	if err != nil {
		return nil, fmt.Errorf("certificate authority: %w", err)
	}
	p.ca = c
	leaves := []leaf{
		{name: "etcd", cn: "etcd", server: true, client: true}, // etcd's peer port presents it as a client too
		{name: "apiserver-etcd-client", cn: "kube-apiserver-etcd-client", client: true},
		{name: "apiserver", cn: "kube-apiserver", server: true},
		{name: "admin", cn: "validator-manager-admin", orgs: []string{"system:masters"}, client: true},
		// The controller manager runs every controller with its own
		// credentials (no per-controller service accounts), so it needs the
		// administrator group, as kubeadm's single-identity setups do.
		{name: "controller-manager", cn: "system:kube-controller-manager", orgs: []string{"system:masters"}, client: true},
		// The simulated node plays scheduler, kubelet and volume
		// provisioner at once: the rights of all three.
		{name: "node", cn: "nodesim", orgs: []string{"system:masters"}, client: true},
	}
	for _, l := range leaves {
		if err := p.ensureLeaf(l); err != nil {
			return nil, fmt.Errorf("certificate %s: %w", l.name, err)
		}
	}
	if err := ensureKey(p.file("sa.key"), p.file("sa.pub")); err != nil {
		return nil, fmt.Errorf("service account key: %w", err)
	}
	return p, nil
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

func loadOrCreateCA(certFile, keyFile string) (*ca, error) {
	if certPEM, err := os.ReadFile(certFile); err == nil {
		cert, err := parseCert(certPEM)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", certFile, err)
		}
		key, err := readKey(keyFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", keyFile, err)
		}
		return &ca{cert: cert, key: key}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return issue(certFile, keyFile, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "validator-manager-embedded-ca"},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, caValidity, nil)
}

// ensureLeaf keeps <name>.crt/.key when they were signed by the CA, carry
// the wanted subject and are valid for more than renewBefore; else makes them.
func (p *pki) ensureLeaf(l leaf) error {
	certFile, keyFile := p.file(l.name+".crt"), p.file(l.name+".key")
	if b, err := os.ReadFile(certFile); err == nil {
		if c, err := parseCert(b); err == nil && c.CheckSignatureFrom(p.ca.cert) == nil &&
			c.Subject.CommonName == l.cn && time.Until(c.NotAfter) > renewBefore {
			if _, err := readKey(keyFile); err == nil {
				return nil
			}
		}
	}
	tmpl := &x509.Certificate{
		Subject:  pkix.Name{CommonName: l.cn, Organization: l.orgs},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
	if l.server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		tmpl.DNSNames = []string{"localhost", l.cn}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		if l.name == "apiserver" {
			tmpl.DNSNames = append(tmpl.DNSNames, "kubernetes", "kubernetes.default", "kubernetes.default.svc")
		}
	}
	if l.client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	_, err := issue(certFile, keyFile, tmpl, leafValidity, p.ca)
	return err
}

// issue writes a new key to keyFile and a certificate of tmpl for it to
// certFile, valid from an hour ago for validity, signed by parent (by
// itself when parent is nil).
func issue(certFile, keyFile string, tmpl *x509.Certificate, validity time.Duration, parent *ca) (*ca, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(validity)
	if parent == nil {
		parent = &ca{cert: tmpl, key: key}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent.cert, key.Public(), parent.key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	if err := writeKey(keyFile, key); err != nil {
		return nil, err
	}
	return &ca{cert: cert, key: key}, atomicfile.Write(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
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
	return atomicfile.Write(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600)
}

func parseCert(b []byte) (*x509.Certificate, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(blk.Bytes)
}

func readKey(file string) (crypto.Signer, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "EC PRIVATE KEY" {
		return nil, errors.New("no PEM EC private key")
	}
	return x509.ParseECPrivateKey(blk.Bytes)
}

func writeKey(file string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return atomicfile.Write(file, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// mkdirPrivate makes dir (and parents) and gives it mode 0700.
func mkdirPrivate(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}
