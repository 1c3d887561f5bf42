package main

import (
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/rayfleet/rayfleet/spoke/dashboard"
	"github.com/rayfleet/rayfleet/spoke/rayservice"
)

func TestGatewayAPIServed(t *testing.T) {
	resources := func(gv string, names ...string) *metav1.APIResourceList {
		l := &metav1.APIResourceList{GroupVersion: gv}
		for _, n := range names {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: n})
		}
		return l
	}
	tests := []struct {
		name      string
		resources []*metav1.APIResourceList
		failWith  error
		want      bool
		wantErr   bool
	}{
		{name: "no Gateway API", resources: []*metav1.APIResourceList{resources("v1", "pods")}, want: false},
		{
			name:      "v1 with gateways and httproutes",
			resources: []*metav1.APIResourceList{resources(gatewayGroupVersion, "gatewayclasses", "gateways", "gateways/status", "httproutes", "httproutes/status")},
			want:      true,
		},
		{name: "v1 without httproutes", resources: []*metav1.APIResourceList{resources(gatewayGroupVersion, "gatewayclasses", "gateways")}, want: false},
		{name: "v1 without gateways", resources: []*metav1.APIResourceList{resources(gatewayGroupVersion, "httproutes")}, want: false},
		{name: "only v1beta1", resources: []*metav1.APIResourceList{resources("gateway.networking.k8s.io/v1beta1", "gateways", "httproutes")}, want: false},
		{name: "discovery fails", failWith: errors.New("connection refused"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: tt.resources}}
			if tt.failWith != nil {
				dc.AddReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.failWith
				})
			}
			got, err := gatewayAPIServed(dc)
			if (err != nil) != tt.wantErr {
				t.Fatalf("gatewayAPIServed error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("gatewayAPIServed = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSetDashboardAccess(t *testing.T) {
	rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "rs-abcde", Namespace: "team"}}
	headSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "rs-abcde-head-svc", Namespace: "team"}}
	head := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "rs-abcde-head-x", Namespace: "team"},
		Status:     corev1.PodStatus{PodIP: "10.244.0.7"},
	}
	tests := []struct {
		name             string
		dashboard, proxy string
		domain           string
		wantDashboard    string
		wantProxy        string
		wantErr          bool
	}{
		{
			name:      "defaults: in-cluster DNS and the Pod IP",
			dashboard: dashboard.DefaultDashboardTemplate, proxy: dashboard.DefaultProxyTemplate,
			domain:        "cluster.local",
			wantDashboard: "http://rs-abcde-head-svc.team.svc.cluster.local:8265",
			wantProxy:     "http://10.244.0.7:8000",
		},
		{
			name:      "CLUSTER_DOMAIN reaches the dashboard address",
			dashboard: dashboard.DefaultDashboardTemplate, proxy: dashboard.DefaultProxyTemplate,
			domain:        "example.org",
			wantDashboard: "http://rs-abcde-head-svc.team.svc.example.org:8265",
			wantProxy:     "http://10.244.0.7:8000",
		},
		{
			name:          "loopback stand-in",
			dashboard:     "http://127.0.0.1:8265/clusters/{namespace}/{cluster}",
			proxy:         "http://127.0.0.1:8265/proxies/{namespace}/{cluster}/{podIP}",
			domain:        "cluster.local",
			wantDashboard: "http://127.0.0.1:8265/clusters/team/rs-abcde",
			wantProxy:     "http://127.0.0.1:8265/proxies/team/rs-abcde/10.244.0.7",
		},
		{name: "unknown placeholder in the dashboard template", dashboard: "http://{nope}:{port}", proxy: dashboard.DefaultProxyTemplate, wantErr: true},
		{name: "proxy template with a dashboard-only placeholder", dashboard: dashboard.DefaultDashboardTemplate, proxy: "http://{service}:{port}", wantErr: true},
		{name: "unmatched brace", dashboard: "http://{service:{port}", proxy: dashboard.DefaultProxyTemplate, wantErr: true},
		{name: "not http", dashboard: "ftp://{service}:{port}", proxy: dashboard.DefaultProxyTemplate, wantErr: true},
		{name: "not a URL", dashboard: "::not a url::", proxy: dashboard.DefaultProxyTemplate, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts rayservice.Options
			opts.Build.ClusterDomain = tt.domain
			f := flags{dashboardTemplate: tt.dashboard, proxyTemplate: tt.proxy}
			err := setDashboardAccess(&opts, f, prometheus.NewRegistry())
			if (err != nil) != tt.wantErr {
				t.Fatalf("setDashboardAccess error = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				if opts.Resolver != nil || opts.Dashboards != nil {
					t.Error("options were filled in despite the error")
				}
				return
			}
			if opts.Dashboards == nil {
				t.Error("Dashboards is nil, want a client factory")
			}
			if opts.Resolver == nil {
				t.Fatal("Resolver is nil")
			}
			if got := opts.Resolver.DashboardURL(rc, headSvc, 8265); got != tt.wantDashboard {
				t.Errorf("DashboardURL = %q, want %q", got, tt.wantDashboard)
			}
			if got := opts.Resolver.ProxyURL(rc, head, 8000); got != tt.wantProxy {
				t.Errorf("ProxyURL = %q, want %q", got, tt.wantProxy)
			}
		})
	}
}
