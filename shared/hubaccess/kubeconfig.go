package hubaccess

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// RefusedKubeconfig is why a member's kubeconfig is not used: the path of the field in the
// kubeconfig (as kubectl spells it, e.g. users[hub].exec) and what the field would make the hub
// do. Anyone who can write a labelled Secret in the hub namespace chooses the kubeconfig, so
// every field that makes a client read a file, run a program, talk through another host or
// skip checking the server is refused rather than ignored: ignoring it would engage a member
// with a kubeconfig that does not say what the hub does.
type RefusedKubeconfig struct {
	// Field is the refused field's path, e.g. clusters[m1].insecure-skip-tls-verify.
	Field string
	// Why says what the field would do or what is missing.
	Why string
}

// Error is the field's path, then why it is refused.
func (e *RefusedKubeconfig) Error() string {
	return fmt.Sprintf("%s: %s", e.Field, e.Why)
}

// Why a field is refused.
const (
	whyFile      = "names a file on the hub's filesystem; the hub reads credentials from the Secret only (use the -data field)"
	whyProgram   = "runs a program in the hub's Pod; the hub accepts inline credentials only (a token, or client-certificate-data and client-key-data)"
	whyBasicAuth = "basic authentication is gone from Kubernetes; it would send a password on every request"
	whyActAs     = "the hub acts on the member as the identity the member's admin granted (which the member's guard is matched on), never as another"
)

// CheckKubeconfig returns a *RefusedKubeconfig naming the first field of cfg's current
// context, cluster or user that the hub refuses, or nil when the hub may reach the member with
// it (see RESTConfig). Other contexts, clusters and users are never used, so not checked.
func CheckKubeconfig(cfg *clientcmdapi.Config) error {
	_, _, err := current(cfg)
	return err
}

// RESTConfig parses data as a member's kubeconfig, checks it (CheckKubeconfig) and returns the
// rest.Config the hub reaches the member with, built field by field from the checked data: the
// server, its CA and TLS server name, and a bearer token or client certificate. clientcmd's own
// client config is not used because it resolves file paths and plugins; the rest.Config
// returned here has none, so it can neither read a file nor run a program.
func RESTConfig(data []byte) (*rest.Config, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig does not parse: %w", err)
	}
	cluster, user, err := current(cfg)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:               cluster.Server,
		BearerToken:        user.Token,
		DisableCompression: cluster.DisableCompression,
		TLSClientConfig: rest.TLSClientConfig{
			ServerName: cluster.TLSServerName,
			CAData:     cluster.CertificateAuthorityData,
			CertData:   user.ClientCertificateData,
			KeyData:    user.ClientKeyData,
		},
	}, nil
}

// current returns the current context's cluster and user once both pass the checks.
func current(cfg *clientcmdapi.Config) (*clientcmdapi.Cluster, *clientcmdapi.AuthInfo, error) {
	if cfg == nil || cfg.CurrentContext == "" {
		return nil, nil, &RefusedKubeconfig{Field: "current-context", Why: "is not set, so which cluster and user to use is ambiguous"}
	}
	name := cfg.CurrentContext
	ctx := cfg.Contexts[name]
	if ctx == nil {
		return nil, nil, &RefusedKubeconfig{Field: "current-context", Why: fmt.Sprintf("names context %q, which the kubeconfig lacks", name)}
	}
	cluster := cfg.Clusters[ctx.Cluster]
	if ctx.Cluster == "" || cluster == nil {
		return nil, nil, &RefusedKubeconfig{Field: fmt.Sprintf("contexts[%s].cluster", name),
			Why: fmt.Sprintf("names cluster %q, which the kubeconfig lacks", ctx.Cluster)}
	}
	user := cfg.AuthInfos[ctx.AuthInfo]
	if ctx.AuthInfo == "" || user == nil {
		return nil, nil, &RefusedKubeconfig{Field: fmt.Sprintf("contexts[%s].user", name),
			Why: fmt.Sprintf("names user %q, which the kubeconfig lacks", ctx.AuthInfo)}
	}
	if err := checkCluster(ctx.Cluster, cluster); err != nil {
		return nil, nil, err
	}
	if err := checkUser(ctx.AuthInfo, user); err != nil {
		return nil, nil, err
	}
	return cluster, user, nil
}

// fieldCheck is one possible refusal: the field's name in the kubeconfig, whether the
// kubeconfig is refused for it, and why.
type fieldCheck struct {
	field   string
	refused bool
	why     string
}

func checkCluster(name string, c *clientcmdapi.Cluster) error {
	checks := []fieldCheck{
		{"certificate-authority", c.CertificateAuthority != "", whyFile},
		{"insecure-skip-tls-verify", c.InsecureSkipTLSVerify,
			"the hub would send its credentials to whoever answers; give certificate-authority-data instead"},
		{"proxy-url", c.ProxyURL != "",
			"the hub would send its requests, credentials included, through another host; the hub reaches members directly"},
		{"certificate-authority-data", len(c.CertificateAuthorityData) == 0,
			"is missing: the hub checks each member's API server against the CA given here, not the system's roots"},
	}
	if err := firstRefused(fmt.Sprintf("clusters[%s]", name), checks); err != nil {
		return err
	}
	if !x509.NewCertPool().AppendCertsFromPEM(c.CertificateAuthorityData) {
		return &RefusedKubeconfig{Field: fmt.Sprintf("clusters[%s].certificate-authority-data", name),
			Why: "holds no PEM certificate"}
	}
	u, err := url.Parse(c.Server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return &RefusedKubeconfig{Field: fmt.Sprintf("clusters[%s].server", name),
			Why: fmt.Sprintf("is %q, not an https:// URL: the hub sends its credentials over TLS only", c.Server)}
	}
	return nil
}

func checkUser(name string, u *clientcmdapi.AuthInfo) error {
	checks := []fieldCheck{
		{"exec", u.Exec != nil, whyProgram},
		{"auth-provider", u.AuthProvider != nil, whyProgram},
		{"tokenFile", u.TokenFile != "", whyFile},
		{"client-certificate", u.ClientCertificate != "", whyFile},
		{"client-key", u.ClientKey != "", whyFile},
		{"username", u.Username != "", whyBasicAuth},
		{"password", u.Password != "", whyBasicAuth},
		{"as", u.Impersonate != "", whyActAs},
		{"as-uid", u.ImpersonateUID != "", whyActAs},
		{"as-groups", len(u.ImpersonateGroups) > 0, whyActAs},
		{"as-user-extra", len(u.ImpersonateUserExtra) > 0, whyActAs},
	}
	prefix := fmt.Sprintf("users[%s]", name)
	if err := firstRefused(prefix, checks); err != nil {
		return err
	}
	certSet, keySet := len(u.ClientCertificateData) > 0, len(u.ClientKeyData) > 0
	switch {
	case certSet && !keySet:
		return &RefusedKubeconfig{Field: prefix + ".client-key-data", Why: "is missing while client-certificate-data is set"}
	case keySet && !certSet:
		return &RefusedKubeconfig{Field: prefix + ".client-certificate-data", Why: "is missing while client-key-data is set"}
	case !certSet && u.Token == "":
		return &RefusedKubeconfig{Field: prefix, Why: "has no credentials: give a token, or client-certificate-data and client-key-data"}
	case certSet:
		if _, err := tls.X509KeyPair(u.ClientCertificateData, u.ClientKeyData); err != nil {
			return &RefusedKubeconfig{Field: prefix + ".client-certificate-data",
				Why: fmt.Sprintf("is no certificate matching client-key-data: %v", err)}
		}
	}
	return nil
}

func firstRefused(prefix string, checks []fieldCheck) error {
	for _, c := range checks {
		if c.refused {
			return &RefusedKubeconfig{Field: prefix + "." + c.field, Why: c.why}
		}
	}
	return nil
}
