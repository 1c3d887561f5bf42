package builder

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func tcp(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, AppProtocol: ptr.To("tcp")}
}

func headSelector(name string) map[string]string {
	return map[string]string{
		labels.Cluster: name, labels.NodeType: "head", labels.Identifier: name + "-head",
		labels.AppName: "kuberay", labels.CreatedBy: "kuberay-operator",
	}
}

func TestHeadService(t *testing.T) {
	samplePorts := []corev1.ServicePort{tcp("client", 10001), tcp("dashboard", 8265), tcp("gcs-server", 6379), tcp("metrics", 8080)}
	tests := []struct {
		name      string
		cluster   *rayv1.RayCluster
		clusterIP bool
		want      *corev1.Service
	}{
		{
			name:    "headless by default, ports sorted by name, metrics added",
			cluster: newCluster("rc").Obj(),
			want: &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "rc-head-svc", Namespace: "ns", Labels: headSelector("rc"), Annotations: map[string]string{}},
				Spec: corev1.ServiceSpec{Selector: headSelector("rc"), Ports: samplePorts,
					ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true},
			},
		},
		{
			name:      "ClusterIP when ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE is set",
			cluster:   newCluster("rc").Obj(),
			clusterIP: true,
			want: &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "rc-head-svc", Namespace: "ns", Labels: headSelector("rc"), Annotations: map[string]string{}},
				Spec:       corev1.ServiceSpec{Selector: headSelector("rc"), Ports: samplePorts},
			},
		},
		{
			name: "serviceType, annotations, default ports for a portless head, unnamed ports",
			cluster: newCluster("rc").Spec(func(s *rayv1.RayClusterSpec) {
				s.HeadServiceAnnotations = map[string]string{"a": "1"}
				s.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort
				s.HeadGroupSpec.Template.Spec.Containers[0].Ports = nil
			}).Obj(),
			want: &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "rc-head-svc", Namespace: "ns", Labels: headSelector("rc"), Annotations: map[string]string{"a": "1"}},
				Spec: corev1.ServiceSpec{Selector: headSelector("rc"), Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{
					tcp("client", 10001), tcp("dashboard", 8265), tcp("gcs-server", 6379), tcp("metrics", 8080), tcp("serve", 8000),
				}},
			},
		},
		{
			name: "unnamed container ports get <port>-port; app name comes from the head template",
			cluster: newCluster("rc").Head(func(h *rayv1.HeadGroupSpec) {
				h.Template.Labels = map[string]string{labels.AppName: "mine"}
				h.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 1234}, {Name: "metrics", ContainerPort: 9000}}
			}).Obj(),
			want: func() *corev1.Service {
				sel := headSelector("rc")
				sel[labels.AppName] = "mine"
				return &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: "rc-head-svc", Namespace: "ns", Labels: sel, Annotations: map[string]string{}},
					Spec: corev1.ServiceSpec{Selector: sel, Ports: []corev1.ServicePort{tcp("1234-port", 1234), tcp("metrics", 9000)},
						ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true},
				}
			}(),
		},
		{
			name: "user headService: name and type kept, selector replaced, our labels and annotations win, ports appended",
			cluster: newCluster("rc").Spec(func(s *rayv1.RayClusterSpec) {
				s.HeadServiceAnnotations = map[string]string{"a": "ours"}
				s.HeadGroupSpec.HeadService = &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{
						Name: "custom", Namespace: "elsewhere",
						Labels:      map[string]string{"team": "x", labels.Cluster: "wrong"},
						Annotations: map[string]string{"a": "theirs", "b": "2"},
					},
					Spec: corev1.ServiceSpec{
						Type:     corev1.ServiceTypeLoadBalancer,
						Selector: map[string]string{"ignored": "yes"},
						Ports:    []corev1.ServicePort{{Name: "extra", Port: 1}},
					},
				}
			}).Obj(),
			want: &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{
					Name: "custom", Namespace: "ns",
					Labels:      map[string]string{"team": "x", labels.Cluster: "rc", labels.NodeType: "head", labels.Identifier: "rc-head", labels.AppName: "kuberay", labels.CreatedBy: "kuberay-operator"},
					Annotations: map[string]string{"a": "ours", "b": "2"},
				},
				Spec: corev1.ServiceSpec{
					Type: corev1.ServiceTypeLoadBalancer, Selector: headSelector("rc"),
					Ports: append([]corev1.ServicePort{{Name: "extra", Port: 1}}, samplePorts...),
				},
			},
		},
		{
			name: "user headService without name or type gets the defaults and stays non-headless",
			cluster: newCluster("rc").Spec(func(s *rayv1.RayClusterSpec) {
				s.HeadGroupSpec.ServiceType = corev1.ServiceTypeClusterIP
				s.HeadGroupSpec.HeadService = &corev1.Service{}
			}).Obj(),
			want: &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "rc-head-svc", Namespace: "ns", Labels: headSelector("rc"), Annotations: map[string]string{}},
				Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: headSelector("rc"), Ports: samplePorts},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.HeadServiceClusterIP = tt.clusterIP
			got, err := HeadService(tt.cluster, opts)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(tt.cluster, rayv1.GroupVersion.WithKind("RayCluster"))}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("head Service (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServeService(t *testing.T) {
	wantLabels := map[string]string{labels.OriginatedFromCRName: "rc", labels.OriginatedFromCRD: "RayCluster", labels.Serve: "rc-serve"}
	tests := []struct {
		name      string
		ports     []corev1.ContainerPort
		svcType   corev1.ServiceType
		wantPorts []corev1.ServicePort
		wantErr   bool
	}{
		{name: "no serve port", ports: []corev1.ContainerPort{{Name: "dashboard", ContainerPort: 8265}}, wantErr: true},
		{name: "portless head falls back to 8000", wantPorts: []corev1.ServicePort{{Name: "serve", Port: 8000}}},
		{
			name:      "serve and serve-<protocol> ports",
			ports:     []corev1.ContainerPort{{Name: "serve-grpc", ContainerPort: 9000}, {Name: "serve", ContainerPort: 8000}, {Name: "server", ContainerPort: 1}},
			svcType:   corev1.ServiceTypeLoadBalancer,
			wantPorts: []corev1.ServicePort{{Name: "serve", Port: 8000}, {Name: "serve-grpc", Port: 9000}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newCluster("rc").Head(func(h *rayv1.HeadGroupSpec) {
				h.Template.Spec.Containers[0].Ports = tt.ports
				h.ServiceType = tt.svcType
			}).Obj()
			got, err := ServeService(rc)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			want := &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "rc-serve-svc", Namespace: "ns", Labels: wantLabels,
					OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind("RayCluster"))}},
				Spec: corev1.ServiceSpec{Selector: map[string]string{labels.Cluster: "rc"}, Ports: tt.wantPorts, Type: tt.svcType},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("serve Service (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHeadlessService(t *testing.T) {
	rc := newCluster("rc").Obj()
	rc.Spec.WorkerGroupSpecs[0].NumOfHosts = 2
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "rc-headless", Namespace: "ns", Labels: map[string]string{labels.HeadlessWorkerService: "rc"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind("RayCluster"))}},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Type: corev1.ServiceTypeClusterIP, PublishNotReadyAddresses: true,
			Selector: map[string]string{labels.Cluster: "rc", labels.NodeType: "worker"},
		},
	}
	if diff := cmp.Diff(want, HeadlessService(rc)); diff != "" {
		t.Errorf("headless Service (-want +got):\n%s", diff)
	}
}

func TestServeServiceEnabled(t *testing.T) {
	for value, want := range map[string]bool{"true": true, "True": false, "false": false, "": false} {
		rc := newCluster("rc").Obj()
		if value != "" {
			rc.Annotations = map[string]string{labels.EnableServeService: value}
		}
		if got := ServeServiceEnabled(rc); got != want {
			t.Errorf("ServeServiceEnabled(%q) = %v, want %v", value, got, want)
		}
	}
}

func TestNotControlled(t *testing.T) {
	rs := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns", UID: "rs-uid"}}
	ours := controllerRefs(rs, rayServiceKind)
	namesake := controllerRefs(&rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Name: "svc", UID: "old-uid"}}, rayServiceKind)
	tests := []struct {
		name string
		refs []metav1.OwnerReference
		want string
	}{
		{name: "ours", refs: ours},
		{name: "no owner", want: "Service ns/web has no controller, not by RayService svc"},
		{
			name: "another application's",
			refs: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "d", Controller: ptr.To(true)}},
			want: "Service ns/web is controlled by Deployment web, not by RayService svc",
		},
		{
			name: "owned but not controlled",
			refs: []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayService", Name: "svc", UID: "rs-uid"}},
			want: "Service ns/web has no controller, not by RayService svc",
		},
		{name: "a namesake's", refs: namesake, want: "Service ns/web is controlled by an earlier RayService svc (uid old-uid), not by RayService svc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", OwnerReferences: tt.refs}}
			if got := NotControlled(svc, "Service", rs, "RayService"); got != tt.want {
				t.Errorf("NotControlled = %q, want %q", got, tt.want)
			}
		})
	}
}
