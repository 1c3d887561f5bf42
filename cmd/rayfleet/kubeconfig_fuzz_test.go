package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// connectDeadline is how long reading a kubeconfig and building a client from it may take; no
// request is made, so it is parsing alone.
const connectDeadline = 5 * time.Second

// kubeconfigSeeds are kubeconfigs a user might pass with --hub-kubeconfig or --member-kubeconfig:
// a valid one, one naming its namespace, one whose current context is missing, JSON, YAML with
// a bomb in it, and bytes that are no kubeconfig at all.
var kubeconfigSeeds = []string{
	`apiVersion: v1
kind: Config
clusters:
- name: hub
  cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: secret}
contexts:
- name: hub
  context: {cluster: hub, user: admin, namespace: team}
current-context: hub
`,
	`apiVersion: v1
kind: Config
clusters:
- {name: c, cluster: {server: "http://localhost:8080"}}
contexts:
- {name: a, context: {cluster: c}}
current-context: missing
`,
	`{"apiVersion":"v1","kind":"Config","clusters":[{"name":"c","cluster":{"server":"https://[::1]:6443"}}],` +
		`"contexts":[{"name":"c","context":{"cluster":"c","user":"u"}}],"users":[{"name":"u","user":{"username":"a","password":"b"}}],"current-context":"c"}`,
	"apiVersion: v1\nkind: Config\na: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n" +
		"c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n",
	"apiVersion: v1\nkind: Config\nclusters: {}\n",
	"",
	"\x00\xff{[",
}

// FuzzConnect reads arbitrary bytes as the kubeconfig file a user gives the CLI. Whatever the
// file: no panic, an answer within connectDeadline, the same answer twice; an error that says
// which cluster's kubeconfig it was about; a file clientcmd cannot decode always an error; and a
// client that is built has a server and a namespace. Kubeconfigs that name files (certificates,
// token files) or run programs (exec, auth providers) are not tried: building a client reads
// those files, and the fuzzer must not read whatever path it makes up.
func FuzzConnect(f *testing.F) {
	for _, seed := range kubeconfigSeeds {
		f.Add([]byte(seed), "")
		f.Add([]byte(seed), "hub")
	}
	f.Fuzz(func(t *testing.T, data []byte, context string) {
		decoded, decodeErr := clientcmd.Load(data)
		if decodeErr == nil && touchesOutside(decoded) {
			return
		}
		path := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		flags := clusterFlags{kubeconfig: path, context: context}
		start := time.Now()
		got, err := connect(flags, "hub")
		if took := time.Since(start); took > connectDeadline {
			t.Fatalf("connect took %v", took)
		}
		again, againErr := connect(flags, "hub")
		if (err == nil) != (againErr == nil) || (err != nil && err.Error() != againErr.Error()) ||
			(err == nil && (got.Config.Host != again.Config.Host || got.namespace != again.namespace)) {
			t.Fatalf("connect is not deterministic: %v, then %v", err, againErr)
		}
		if decodeErr != nil && err == nil {
			t.Fatalf("connect accepted a kubeconfig clientcmd cannot decode (%v)", decodeErr)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "hub") {
				t.Fatalf("the error %q does not say which cluster it is about", err)
			}
			return
		}
		if got.Config.Host == "" || got.namespace == "" || got.Client == nil {
			t.Fatalf("connect built a client without a server, a namespace or a client: %+v", got)
		}
	})
}

// touchesOutside reports whether building a client from cfg would read a file or run a
// program it names.
func touchesOutside(cfg *clientcmdapi.Config) bool {
	for _, c := range cfg.Clusters {
		if c != nil && c.CertificateAuthority != "" {
			return true
		}
	}
	for _, u := range cfg.AuthInfos {
		if u != nil && (u.ClientCertificate != "" || u.ClientKey != "" || u.TokenFile != "" || u.Exec != nil || u.AuthProvider != nil) {
			return true
		}
	}
	return false
}
