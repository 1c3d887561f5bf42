package hubaccess

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/rayfleet/rayfleet/shared/testing/testcert"
)

// testPEM returns a self-signed certificate and its key, PEM-encoded.
func testPEM(t *testing.T) (certPEM, keyPEM []byte) { return testcert.New(t, "test") }

// validKubeconfig is what `rayfleet join` writes: a server, its CA and a token.
func validKubeconfig(ca []byte) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["m1"] = &clientcmdapi.Cluster{Server: "https://10.0.0.1:6443", CertificateAuthorityData: ca, TLSServerName: "api.m1"}
	cfg.AuthInfos["hub"] = &clientcmdapi.AuthInfo{Token: "t0ken"}
	cfg.Contexts["m1"] = &clientcmdapi.Context{Cluster: "m1", AuthInfo: "hub"}
	cfg.CurrentContext = "m1"
	return cfg
}

func TestCheckKubeconfig(t *testing.T) {
	ca, key := testPEM(t)
	tests := []struct {
		name   string
		mutate func(*clientcmdapi.Config)
		// wantField is the refused field; empty when the kubeconfig is accepted.
		wantField string
		// missing: the refusal is of a field the kubeconfig lacks.
		missing bool
	}{
		{name: "token and CA data", mutate: func(*clientcmdapi.Config) {}},
		{name: "client certificate data", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["hub"] = &clientcmdapi.AuthInfo{ClientCertificateData: ca, ClientKeyData: key}
		}},
		{name: "an unused user with exec is never used", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["other"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/bin/sh"}}
			c.Clusters["other"] = &clientcmdapi.Cluster{Server: "http://x", InsecureSkipTLSVerify: true}
		}},
		{name: "no current context", wantField: "current-context",
			mutate: func(c *clientcmdapi.Config) { c.CurrentContext = "" }},
		{name: "current context missing", wantField: "current-context",
			mutate: func(c *clientcmdapi.Config) { c.CurrentContext = "nope" }},
		{name: "context names a missing cluster", wantField: "contexts[m1].cluster",
			mutate: func(c *clientcmdapi.Config) { c.Contexts["m1"].Cluster = "nope" }},
		{name: "context names no user", wantField: "contexts[m1].user",
			mutate: func(c *clientcmdapi.Config) { c.Contexts["m1"].AuthInfo = "" }},
		{name: "exec plugin", wantField: "users[hub].exec", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["hub"].Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", APIVersion: "client.authentication.k8s.io/v1"}
		}},
		{name: "auth provider", wantField: "users[hub].auth-provider", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["hub"].AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"}
		}},
		{name: "token file", wantField: "users[hub].tokenFile", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["hub"].TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
		}},
		{name: "client certificate file", wantField: "users[hub].client-certificate", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["hub"].ClientCertificate = "/etc/cert.pem"
		}},
		{name: "client key file", wantField: "users[hub].client-key", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["hub"].ClientKey = "/etc/key.pem"
		}},
		{name: "basic auth username", wantField: "users[hub].username",
			mutate: func(c *clientcmdapi.Config) { c.AuthInfos["hub"].Username = "admin" }},
		{name: "basic auth password", wantField: "users[hub].password",
			mutate: func(c *clientcmdapi.Config) { c.AuthInfos["hub"].Password = "pw" }},
		{name: "impersonated user", wantField: "users[hub].as",
			mutate: func(c *clientcmdapi.Config) { c.AuthInfos["hub"].Impersonate = "system:admin" }},
		{name: "impersonated uid", wantField: "users[hub].as-uid",
			mutate: func(c *clientcmdapi.Config) { c.AuthInfos["hub"].ImpersonateUID = "0" }},
		{name: "impersonated groups", wantField: "users[hub].as-groups",
			mutate: func(c *clientcmdapi.Config) { c.AuthInfos["hub"].ImpersonateGroups = []string{"system:masters"} }},
		{name: "impersonated extra", wantField: "users[hub].as-user-extra", mutate: func(c *clientcmdapi.Config) {
			c.AuthInfos["hub"].ImpersonateUserExtra = map[string][]string{"scopes": {"x"}}
		}},
		{name: "no credentials", wantField: "users[hub]",
			mutate: func(c *clientcmdapi.Config) { c.AuthInfos["hub"].Token = "" }},
		{name: "certificate without key", wantField: "users[hub].client-key-data", missing: true,
			mutate: func(c *clientcmdapi.Config) { c.AuthInfos["hub"].ClientCertificateData = ca }},
		{name: "key without certificate", wantField: "users[hub].client-certificate-data", missing: true,
			mutate: func(c *clientcmdapi.Config) { c.AuthInfos["hub"].ClientKeyData = key }},
		{name: "certificate not matching its key", wantField: "users[hub].client-certificate-data",
			mutate: func(c *clientcmdapi.Config) {
				c.AuthInfos["hub"].ClientCertificateData, c.AuthInfos["hub"].ClientKeyData = ca, []byte("not a key")
			}},
		{name: "CA file", wantField: "clusters[m1].certificate-authority",
			mutate: func(c *clientcmdapi.Config) { c.Clusters["m1"].CertificateAuthority = "/etc/ca.pem" }},
		{name: "insecure-skip-tls-verify", wantField: "clusters[m1].insecure-skip-tls-verify",
			mutate: func(c *clientcmdapi.Config) { c.Clusters["m1"].InsecureSkipTLSVerify = true }},
		{name: "proxy", wantField: "clusters[m1].proxy-url",
			mutate: func(c *clientcmdapi.Config) { c.Clusters["m1"].ProxyURL = "http://proxy.example:3128" }},
		{name: "no CA data", wantField: "clusters[m1].certificate-authority-data", missing: true,
			mutate: func(c *clientcmdapi.Config) { c.Clusters["m1"].CertificateAuthorityData = nil }},
		{name: "CA data that is no certificate", wantField: "clusters[m1].certificate-authority-data",
			mutate: func(c *clientcmdapi.Config) { c.Clusters["m1"].CertificateAuthorityData = []byte("junk") }},
		{name: "plain http server", wantField: "clusters[m1].server",
			mutate: func(c *clientcmdapi.Config) { c.Clusters["m1"].Server = "http://10.0.0.1:8080" }},
		{name: "server without scheme", wantField: "clusters[m1].server",
			mutate: func(c *clientcmdapi.Config) { c.Clusters["m1"].Server = "10.0.0.1:6443" }},
		{name: "the cluster is checked before the user", wantField: "clusters[m1].insecure-skip-tls-verify",
			mutate: func(c *clientcmdapi.Config) {
				c.Clusters["m1"].InsecureSkipTLSVerify = true
				c.AuthInfos["hub"].Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh"}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := validKubeconfig(ca)
			tt.mutate(cfg)
			err := CheckKubeconfig(cfg)
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var refused *RefusedKubeconfig
			if !errors.As(err, &refused) {
				t.Fatalf("got %v, want a refusal of %s", err, tt.wantField)
			}
			if refused.Field != tt.wantField || refused.Why == "" {
				t.Fatalf("refused %q (%q), want %q", refused.Field, refused.Why, tt.wantField)
			}
			if !strings.HasPrefix(err.Error(), tt.wantField+": ") {
				t.Fatalf("message %q does not start with the field", err.Error())
			}
			// The field is named as it is spelled in a kubeconfig file.
			data, werr := clientcmd.Write(*cfg)
			if werr != nil {
				t.Fatal(werr)
			}
			key := tt.wantField[strings.LastIndex(tt.wantField, ".")+1:]
			if !tt.missing && !strings.Contains(key, "[") && !strings.Contains(string(data), key+":") {
				t.Fatalf("%q is not a key of the kubeconfig:\n%s", key, data)
			}
		})
	}
}

// RESTConfig builds from the checked fields only: whatever else the kubeconfig holds, the
// rest.Config names no file, no program and no proxy, impersonates no one.
func TestRESTConfig(t *testing.T) {
	ca, key := testPEM(t)
	cfg := validKubeconfig(ca)
	cfg.AuthInfos["hub"].ClientCertificateData, cfg.AuthInfos["hub"].ClientKeyData = ca, key
	cfg.Clusters["m1"].DisableCompression = true
	// Never used: only the current context is.
	cfg.AuthInfos["other"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "/bin/sh"}, TokenFile: "/etc/t"}
	cfg.Contexts["other"] = &clientcmdapi.Context{Cluster: "m1", AuthInfo: "other"}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := RESTConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	want := &rest.Config{
		Host: "https://10.0.0.1:6443", BearerToken: "t0ken", DisableCompression: true,
		TLSClientConfig: rest.TLSClientConfig{ServerName: "api.m1", CAData: ca, CertData: ca, KeyData: key},
	}
	if got.String() != want.String() {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if got.ExecProvider != nil || got.AuthProvider != nil || got.BearerTokenFile != "" || got.CAFile != "" ||
		got.CertFile != "" || got.KeyFile != "" || got.Proxy != nil || got.Insecure || got.Username != "" ||
		got.Impersonate.UserName != "" || len(got.Impersonate.Groups) > 0 {
		t.Fatalf("rest.Config reads files, runs programs or impersonates: %s", got)
	}

	refused := validKubeconfig(ca)
	refused.AuthInfos["hub"].Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh"}
	data, err = clientcmd.Write(*refused)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RESTConfig(data); err == nil || !strings.Contains(err.Error(), "users[hub].exec") {
		t.Fatalf("got %v, want a refusal of users[hub].exec", err)
	}
	if _, err := RESTConfig([]byte("\x00{[")); err == nil {
		t.Fatal("bytes that are no kubeconfig were accepted")
	}
}
