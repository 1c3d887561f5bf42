//go:build e2e

package localcluster

import (
	"crypto/tls"
	"crypto/x509"
	"slices"
	"testing"
)

func TestPKIIssuesCertificatesTheAPIServerAccepts(t *testing.T) {
	p, err := newPKI()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(p.CA.CertPEM) {
		t.Fatal("CA PEM not parsable")
	}
	admin, err := p.clientCert("alice", MastersGroup, "team")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		pair    keyPair
		usage   x509.ExtKeyUsage
		dnsName string
		check   func(*testing.T, *x509.Certificate)
	}{
		{name: "serving cert for localhost", pair: p.Serving, usage: x509.ExtKeyUsageServerAuth, dnsName: "localhost"},
		{name: "serving cert for 127.0.0.1", pair: p.Serving, usage: x509.ExtKeyUsageServerAuth, dnsName: "127.0.0.1"},
		{name: "serving cert for the in-cluster name", pair: p.Serving, usage: x509.ExtKeyUsageServerAuth, dnsName: "kubernetes.default.svc"},
		{
			name: "client cert carries user and groups", pair: admin, usage: x509.ExtKeyUsageClientAuth,
			check: func(t *testing.T, c *x509.Certificate) {
				if c.Subject.CommonName != "alice" {
					t.Errorf("CN = %q, want alice", c.Subject.CommonName)
				}
				// The groups are a DER SET: their order is not kept.
				got := slices.Sorted(slices.Values(c.Subject.Organization))
				if want := []string{MastersGroup, "team"}; !slices.Equal(got, want) {
					t.Errorf("O = %v, want %v", got, want)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pair, err := tls.X509KeyPair(tt.pair.CertPEM, tt.pair.KeyPEM)
			if err != nil {
				t.Fatalf("certificate and key do not match: %v", err)
			}
			cert, err := x509.ParseCertificate(pair.Certificate[0])
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{
				Roots: roots, DNSName: tt.dnsName, KeyUsages: []x509.ExtKeyUsage{tt.usage},
			}); err != nil {
				t.Fatalf("does not verify against the CA: %v", err)
			}
			if tt.check != nil {
				tt.check(t, cert)
			}
		})
	}
}
