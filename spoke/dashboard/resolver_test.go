package dashboard

import (
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDashboardURL(t *testing.T) {
	rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "team"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "rc-head-svc", Namespace: "team"}}
	tests := []struct {
		name     string
		template string
		domain   string
		rc       *rayv1.RayCluster
		svc      *corev1.Service
		port     int32
		want     string
	}{
		{name: "default, KubeRay's FQDN", rc: rc, svc: svc, port: 8265,
			want: "http://rc-head-svc.team.svc.cluster.local:8265"},
		{name: "custom cluster domain", domain: "corp.internal", rc: rc, svc: svc, port: 8265,
			want: "http://rc-head-svc.team.svc.corp.internal:8265"},
		{name: "custom dashboard port", rc: rc, svc: svc, port: 9999,
			want: "http://rc-head-svc.team.svc.cluster.local:9999"},
		{name: "loopback stand-in", template: "http://127.0.0.1:4321/clusters/{namespace}/{cluster}", rc: rc, svc: svc, port: 8265,
			want: "http://127.0.0.1:4321/clusters/team/rc"},
		{name: "trailing slash dropped", template: "https://dash.example/{namespace}/{service}/", rc: rc, svc: svc, port: 8265,
			want: "https://dash.example/team/rc-head-svc"},
		{name: "Service without namespace uses the cluster's", rc: rc,
			svc: &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "custom-head"}}, port: 8265,
			want: "http://custom-head.team.svc.cluster.local:8265"},
		{name: "nil inputs do not panic", port: 8265, want: "http://..svc.cluster.local:8265"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewTemplateResolver(tc.template, "", tc.domain)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.DashboardURL(tc.rc, tc.svc, tc.port); got != tc.want {
				t.Errorf("DashboardURL = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestProxyURL(t *testing.T) {
	rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "team"}}
	pod := func(ip string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "rc-head-abcde", Namespace: "team"}, Status: corev1.PodStatus{PodIP: ip}}
	}
	tests := []struct {
		name     string
		template string
		pod      *corev1.Pod
		port     int32
		want     string
	}{
		{name: "default IPv4", pod: pod("10.1.2.3"), port: 8000, want: "http://10.1.2.3:8000"},
		{name: "default IPv6 bracketed", pod: pod("fd00:10::1"), port: 8000, want: "http://[fd00:10::1]:8000"},
		{name: "IPv4-mapped IPv6 bracketed", pod: pod("::ffff:10.1.2.3"), port: 8000, want: "http://[::ffff:10.1.2.3]:8000"},
		{name: "IPv6 in a path not bracketed", template: "http://127.0.0.1:4321/pods/{podIP}/{port}",
			pod: pod("fd00::1"), port: 8000, want: "http://127.0.0.1:4321/pods/fd00::1/8000"},
		{name: "loopback stand-in", template: "http://127.0.0.1:4321/clusters/{namespace}/{cluster}/proxy",
			pod: pod("10.1.2.3"), port: 8000, want: "http://127.0.0.1:4321/clusters/team/rc/proxy"},
		{name: "pod name", template: "http://{pod}.{namespace}.pods:{port}", pod: pod("10.1.2.3"), port: 8000,
			want: "http://rc-head-abcde.team.pods:8000"},
		{name: "path values escaped", template: "http://proxy/{pod}", port: 8000,
			pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a/b?c"}}, want: "http://proxy/a%2Fb%3Fc"},
		{name: "pod without IP yet", pod: pod(""), port: 8000, want: "http://:8000"},
		{name: "nil pod does not panic", port: 8000, want: "http://:8000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewTemplateResolver("", tc.template, "")
			if err != nil {
				t.Fatal(err)
			}
			if got := r.ProxyURL(rc, tc.pod, tc.port); got != tc.want {
				t.Errorf("ProxyURL = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewTemplateResolverRejects(t *testing.T) {
	tests := []struct {
		name, dashboard, proxy, wantErr string
	}{
		{name: "unknown dashboard placeholder", dashboard: "http://{service}:{podIP}", wantErr: "unknown placeholder {podIP}"},
		{name: "unknown proxy placeholder", proxy: "http://{service}:{port}", wantErr: "unknown placeholder {service}"},
		{name: "misspelt placeholder", dashboard: "http://{Service}:{port}", wantErr: "unknown placeholder {Service}"},
		{name: "unclosed brace", dashboard: "http://{service:{port}", wantErr: `unmatched "{" at offset 7`},
		{name: "unopened brace", proxy: "http://podIP}:{port}", wantErr: `unmatched "}" at offset 12`},
		{name: "brace at the end", proxy: "http://{podIP}:{port}{", wantErr: `unmatched "{"`},
		{name: "no scheme", dashboard: "{service}.{namespace}:{port}", wantErr: "scheme must be http or https"},
		{name: "other scheme", dashboard: "ftp://{service}:{port}", wantErr: `scheme must be http or https, got "ftp"`},
		{name: "no host", proxy: "http:///{pod}", wantErr: "no host"},
		{name: "query", dashboard: "http://{service}:{port}?x=1", wantErr: "query or fragment"},
		{name: "fragment", dashboard: "http://{service}:{port}#x", wantErr: "query or fragment"},
		{name: "credentials", dashboard: "http://user:pw@{service}:{port}", wantErr: "credentials"},
		{name: "not a URL", dashboard: "http://{service}:port", wantErr: "not a URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTemplateResolver(tc.dashboard, tc.proxy, "")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
