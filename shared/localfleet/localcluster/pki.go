package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity is long enough for any test run and short enough that a leaked key is useless.
const certValidity = 24 * time.Hour

// keyPair is a certificate with its private key, both PEM encoded.
type keyPair struct {
	CertPEM []byte
	KeyPEM  []byte
	cert    *x509.Certificate
	key     crypto.Signer
}

// pki holds everything the control plane needs to authenticate itself and its clients.
type pki struct {
	CA      keyPair
	Serving keyPair
	// SAKeyPEM signs ServiceAccount tokens (apiserver) and is read by the KCM's token controller.
	SAKeyPEM []byte
	// SAPubPEM verifies ServiceAccount tokens.
	SAPubPEM []byte
}

// newPKI creates a fresh CA, a serving certificate for the loopback API server (and the
// extra addresses it is reached at, such as a real Node's namespace address) and a
// ServiceAccount signing key. ECDSA P-256 keeps generation in the milliseconds.
func newPKI(extraIPs ...net.IP) (*pki, error) {
	ca, err := newCA("rayfleet-e2e-ca")
	if err != nil {
		return nil, err
	}
	serving, err := ca.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}, extraIPs...),
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	})
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating ServiceAccount key: %w", err)
	}
	saKeyPEM, err := encodeKey(saKey)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("encoding ServiceAccount public key: %w", err)
	}
	return &pki{
		CA:       ca,
		Serving:  serving,
		SAKeyPEM: saKeyPEM,
		SAPubPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
	}, nil
}

// clientCert issues a client certificate; Kubernetes reads the user from CN and groups from O.
func (p *pki) clientCert(user string, groups ...string) (keyPair, error) {
	return p.CA.issue(&x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// write stores the files the control-plane binaries read and returns their paths.
func (p *pki) write(dir string) (pkiFiles, error) {
	f := pkiFiles{
		CACert:      filepath.Join(dir, "ca.crt"),
		ServingCert: filepath.Join(dir, "apiserver.crt"),
		ServingKey:  filepath.Join(dir, "apiserver.key"),
		SAKey:       filepath.Join(dir, "sa.key"),
		SAPub:       filepath.Join(dir, "sa.pub"),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return f, fmt.Errorf("creating PKI dir %s: %w", dir, err)
	}
	for path, data := range map[string][]byte{
		f.CACert: p.CA.CertPEM, f.ServingCert: p.Serving.CertPEM, f.ServingKey: p.Serving.KeyPEM,
		f.SAKey: p.SAKeyPEM, f.SAPub: p.SAPubPEM,
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return f, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return f, nil
}

// pkiFiles are the paths of the PKI material on disk.
type pkiFiles struct {
	CACert, ServingCert, ServingKey, SAKey, SAPub string
}

func newCA(name string) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generating CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return keyPair{}, fmt.Errorf("self-signing CA: %w", err)
	}
	return newKeyPair(der, key)
}

// issue signs tmpl (subject, usages and SANs filled in by the caller) with the CA.
func (ca keyPair) issue(tmpl *x509.Certificate) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generating key for %s: %w", tmpl.Subject.CommonName, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return keyPair{}, fmt.Errorf("generating serial: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(certValidity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	tmpl.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return keyPair{}, fmt.Errorf("signing certificate for %s: %w", tmpl.Subject.CommonName, err)
	}
	return newKeyPair(der, key)
}

func newKeyPair(der []byte, key *ecdsa.PrivateKey) (keyPair, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, fmt.Errorf("parsing fresh certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return keyPair{}, err
	}
	return keyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  keyPEM,
		cert:    cert,
		key:     key,
	}, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding EC key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}
