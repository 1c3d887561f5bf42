package membership

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/testing/testcert"
)

// testCA returns a self-signed CA certificate, PEM-encoded.
func testCA(t *testing.T) []byte {
	ca, _ := testcert.New(t, "test-ca")
	return ca
}

// join writes kubeconfigs the hub accepts, its CA inline even when the member context names a
// file, and refuses to join a member whose context the hub would refuse.
func TestHubKubeconfig(t *testing.T) {
	ca := testCA(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		server string
		member rest.Config
		// wantErr is in the error; empty when the kubeconfig is written.
		wantErr string
	}{
		{name: "CA data", server: "https://10.0.0.1:6443", member: rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: ca, ServerName: "api"}}},
		{name: "CA file made inline", server: "https://10.0.0.1:6443", member: rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: caFile}}},
		{name: "insecure context", server: "https://10.0.0.1:6443", member: rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}},
			wantErr: "clusters[us].insecure-skip-tls-verify"},
		{name: "no CA", server: "https://10.0.0.1:6443", wantErr: "clusters[us].certificate-authority-data"},
		{name: "plain http", server: "http://10.0.0.1:8080", member: rest.Config{TLSClientConfig: rest.TLSClientConfig{CAData: ca}},
			wantErr: "clusters[us].server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := hubKubeconfig("us", tt.server, &tt.member, []byte("tok"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := hubaccess.RESTConfig(data)
			if err != nil {
				t.Fatalf("the hub refuses what join writes: %v", err)
			}
			if cfg.Host != tt.server || string(cfg.CAData) != string(ca) || cfg.BearerToken != "tok" ||
				cfg.ServerName != tt.member.ServerName {
				t.Fatalf("rest.Config %s does not carry the server, CA, token and server name", cfg)
			}
		})
	}
}
