package status

import (
	"errors"
	"maps"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestFindHeadPod(t *testing.T) {
	rc := raybuilder.MakeRayCluster(testCluster, testNS).Obj()
	tests := []struct {
		name     string
		pods     []corev1.Pod
		wantName string
		wantErr  error
	}{
		{name: "no Pods"},
		{name: "workers only", pods: podList(workerPod("w1"))},
		{name: "one head among workers", pods: podList(workerPod("w1"), headPod(), workerPod("w2")), wantName: testCluster + "-head"},
		{name: "two heads", pods: podList(headPod(), raybuilder.MakePod("other-head", testNS).HeadOf(testCluster)), wantErr: ErrMultipleHeadPods},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			head, err := findHeadPod(rc, tc.pods)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			var got string
			if head != nil {
				got = head.Name
			}
			if got != tc.wantName {
				t.Errorf("head = %q, want %q", got, tc.wantName)
			}
		})
	}
}

func TestHeadInfo(t *testing.T) {
	rc := raybuilder.MakeRayCluster(testCluster, testNS).Obj()
	withIP := func(ip string) *corev1.Pod {
		p := headPod().Ready().Obj()
		p.Status.PodIP = ip
		return p
	}
	svcName := testCluster + "-head-svc"
	tests := []struct {
		name    string
		head    *corev1.Pod
		svc     *corev1.Service
		want    rayv1.HeadInfo
		wantErr error
	}{
		{name: "ClusterIP Service", head: withIP("10.0.0.5"), svc: headService("10.96.0.10"),
			want: rayv1.HeadInfo{PodIP: "10.0.0.5", PodName: testCluster + "-head", ServiceIP: "10.96.0.10", ServiceName: svcName}},
		{name: "headless Service uses the Pod IP", head: withIP("10.0.0.5"), svc: headService(corev1.ClusterIPNone),
			want: rayv1.HeadInfo{PodIP: "10.0.0.5", PodName: testCluster + "-head", ServiceIP: "10.0.0.5", ServiceName: svcName}},
		{name: "headless Service before the Pod has an IP", head: withIP(""), svc: headService(corev1.ClusterIPNone),
			want: rayv1.HeadInfo{PodName: testCluster + "-head", ServiceName: svcName}},
		{name: "headless Service without head Pod", svc: headService(corev1.ClusterIPNone),
			want: rayv1.HeadInfo{ServiceName: svcName}},
		{name: "no head Pod", svc: headService("10.96.0.10"),
			want: rayv1.HeadInfo{ServiceIP: "10.96.0.10", ServiceName: svcName}},
		{name: "no Service", head: withIP("10.0.0.5"), wantErr: ErrHeadServiceNotFound},
		{name: "Service without IP", head: withIP("10.0.0.5"), svc: headService(""), wantErr: ErrHeadServiceNoIP},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := headInfo(rc, tc.head, tc.svc)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err == nil && got != tc.want {
				t.Errorf("headInfo = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestEndpoints(t *testing.T) {
	port := func(name string, nodePort int32, target intstr.IntOrString) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: 9999, NodePort: nodePort, TargetPort: target}
	}
	tests := []struct {
		name string
		svc  *corev1.Service
		want map[string]string
	}{
		{name: "no Service", svc: nil, want: nil},
		{name: "no ports", svc: headService("10.96.0.10"), want: nil},
		{name: "target ports",
			svc:  headService("10.96.0.10", port("gcs-server", 0, intstr.FromInt32(6379)), port("dashboard", 0, intstr.FromInt32(8265))),
			want: map[string]string{"gcs-server": "6379", "dashboard": "8265"}},
		{name: "node port preferred over target port",
			svc:  headService("10.96.0.10", port("dashboard", 30265, intstr.FromInt32(8265)), port("client", 0, intstr.FromInt32(10001))),
			want: map[string]string{"dashboard": "30265", "client": "10001"}},
		{name: "named target port",
			svc:  headService("10.96.0.10", port("serve", 0, intstr.FromString("serve"))),
			want: map[string]string{"serve": "serve"}},
		{name: "unnamed and targetless ports are skipped",
			svc:  headService("10.96.0.10", port("", 0, intstr.FromInt32(1)), port("empty", 0, intstr.IntOrString{}), port("metrics", 0, intstr.FromInt32(8080))),
			want: map[string]string{"metrics": "8080"}},
		{name: "only unusable ports gives nil", svc: headService("10.96.0.10", port("", 30000, intstr.FromInt32(1))), want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := endpoints(tc.svc)
			if (got == nil) != (tc.want == nil) || !maps.Equal(got, tc.want) {
				t.Errorf("endpoints = %#v, want %#v", got, tc.want)
			}
		})
	}
}
