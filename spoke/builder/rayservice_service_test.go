package builder

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// servedCluster is a cluster of RayService "svc" whose head also exposes Serve over HTTP and gRPC.
func servedCluster(name string) *clusterWrapper {
	return newCluster(name).Label(labels.OriginatedFromCRD, "RayService").Label(labels.OriginatedFromCRName, "svc").
		HeadContainer(func(c *corev1.Container) {
			c.Ports = append(c.Ports,
				corev1.ContainerPort{Name: "serve", ContainerPort: 8000},
				corev1.ContainerPort{Name: "serve-grpc", ContainerPort: 9000})
		})
}

// newService is RayService "svc" in "ns" whose rayClusterConfig is servedCluster's spec.
func newService(mutate ...func(rs *rayv1.RayService)) *rayv1.RayService {
	rs := &rayv1.RayService{
		ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns", UID: "svc-uid"},
		Spec:       rayv1.RayServiceSpec{RayClusterSpec: servedCluster("x").Obj().Spec},
	}
	for _, m := range mutate {
		m(rs)
	}
	return rs
}

// ownedBySvc are the owner references of an object controlled by newService().
var ownedBySvc = []metav1.OwnerReference{{
	APIVersion: "ray.io/v1", Kind: "RayService", Name: "svc", UID: "svc-uid",
	Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
}}

// ownedByCluster are the owner references of an object controlled by servedCluster(name).
func ownedByCluster(name string) []metav1.OwnerReference {
	return []metav1.OwnerReference{{
		APIVersion: "ray.io/v1", Kind: "RayCluster", Name: name, UID: "uid-1",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}
}

func TestRayServiceServiceNames(t *testing.T) {
	rc := servedCluster("svc-abcde").Obj()
	custom := newService(func(rs *rayv1.RayService) {
		rs.Spec.ServeService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "my-serve"}}
	})
	unnamed := newService(func(rs *rayv1.RayService) { rs.Spec.ServeService = &corev1.Service{} })
	tests := []struct{ name, got, want string }{
		{"head", RayServiceHeadServiceName(newService()), "svc-head-svc"},
		{"serve", RayServiceServeServiceName(newService()), "svc-serve-svc"},
		{"user's serve Service name", RayServiceServeServiceName(custom), "my-serve"},
		{"user's serve Service without a name", RayServiceServeServiceName(unnamed), "svc-serve-svc"},
		{"per cluster serve", ClusterServeServiceName(rc), "svc-abcde-serve-svc"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestServePortAndDashboardPort(t *testing.T) {
	t.Run("ServePort", func(t *testing.T) {
		tests := []struct {
			name string
			rc   *rayv1.RayCluster
			want int32
		}{
			{name: "nil cluster", rc: nil, want: 8000},
			{name: "no serve port", rc: newCluster("rc").Obj(), want: 8000},
			{name: "only serve-grpc", rc: newCluster("rc").HeadContainer(func(c *corev1.Container) {
				c.Ports = append(c.Ports, corev1.ContainerPort{Name: "serve-grpc", ContainerPort: 9000})
			}).Obj(), want: 8000},
			{name: "named serve port", rc: newCluster("rc").HeadContainer(func(c *corev1.Container) {
				c.Ports = append(c.Ports, corev1.ContainerPort{Name: "serve", ContainerPort: 8123})
			}).Obj(), want: 8123},
			{name: "head without containers", rc: newCluster("rc").Head(func(h *rayv1.HeadGroupSpec) {
				h.Template.Spec.Containers = nil
			}).Obj(), want: 8000},
		}
		for _, tt := range tests {
			if got := ServePort(tt.rc); got != tt.want {
				t.Errorf("%s: ServePort = %d, want %d", tt.name, got, tt.want)
			}
		}
	})
	t.Run("DashboardPort", func(t *testing.T) {
		tests := []struct {
			name   string
			svc    *corev1.Service
			want   int32
			wantOK bool
		}{
			{name: "nil Service"},
			{name: "no dashboard port", svc: &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "client", Port: 10001}}}}},
			{name: "dashboard port", want: 8266, wantOK: true, svc: &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
				{Name: "client", Port: 10001}, {Name: "dashboard", Port: 8266},
			}}}},
		}
		for _, tt := range tests {
			if got, ok := DashboardPort(tt.svc); got != tt.want || ok != tt.wantOK {
				t.Errorf("%s: DashboardPort = %d, %v; want %d, %v", tt.name, got, ok, tt.want, tt.wantOK)
			}
		}
	})
}

func TestRayServiceHeadService(t *testing.T) {
	allPorts := []corev1.ServicePort{tcp("client", 10001), tcp("dashboard", 8265), tcp("gcs-server", 6379),
		tcp("metrics", 8080), tcp("serve", 8000), tcp("serve-grpc", 9000)}
	svcLabels := map[string]string{
		labels.OriginatedFromCRName: "svc", labels.OriginatedFromCRD: "RayService",
		labels.NodeType: "head", labels.Identifier: "svc-head",
	}
	tests := []struct {
		name      string
		rs        *rayv1.RayService
		cluster   *rayv1.RayCluster
		clusterIP bool
		want      *corev1.Service
	}{
		{
			name: "selects the cluster's head, named and labelled after the RayService, headless",
			rs:   newService(),
			// The cluster's headServiceAnnotations stay on its own head Service.
			cluster: servedCluster("svc-abcde").Spec(func(s *rayv1.RayClusterSpec) {
				s.HeadServiceAnnotations = map[string]string{"a": "1"}
			}).Obj(),
			want: &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "svc-head-svc", Namespace: "ns", Labels: svcLabels,
					Annotations: map[string]string{}, OwnerReferences: ownedBySvc},
				Spec: corev1.ServiceSpec{Selector: headSelector("svc-abcde"), Ports: allPorts,
					ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true},
			},
		},
		{
			name:      "a cluster IP when ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE is set",
			rs:        newService(),
			cluster:   servedCluster("svc-abcde").Obj(),
			clusterIP: true,
			want: &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "svc-head-svc", Namespace: "ns", Labels: svcLabels,
					Annotations: map[string]string{}, OwnerReferences: ownedBySvc},
				Spec: corev1.ServiceSpec{Selector: headSelector("svc-abcde"), Ports: allPorts},
			},
		},
		{
			name: "the cluster's headService is the base: its annotations, ports and type are kept",
			rs:   newService(),
			cluster: servedCluster("svc-abcde").Head(func(h *rayv1.HeadGroupSpec) {
				h.HeadService = &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"lb": "internal"}},
					Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
						Ports: []corev1.ServicePort{{Name: "extra", Port: 1234}}},
				}
			}).Obj(),
			want: &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "svc-head-svc", Namespace: "ns", Labels: svcLabels,
					Annotations: map[string]string{"lb": "internal"}, OwnerReferences: ownedBySvc},
				Spec: corev1.ServiceSpec{Selector: headSelector("svc-abcde"), Type: corev1.ServiceTypeLoadBalancer,
					Ports: append([]corev1.ServicePort{{Name: "extra", Port: 1234}}, allPorts...)},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.HeadServiceClusterIP = tt.clusterIP
			before := tt.cluster.DeepCopy()
			got, err := RayServiceHeadService(tt.rs, tt.cluster, opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RayServiceHeadService (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.cluster); diff != "" {
				t.Errorf("the cluster was modified:\n%s", diff)
			}
		})
	}
}

func TestRayServiceHeadServiceLongName(t *testing.T) {
	long := strings.Repeat("s", 47)
	rs := newService(func(rs *rayv1.RayService) { rs.Name = long })
	got, err := RayServiceHeadService(rs, servedCluster(long+"-abcde").Obj(), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != long+"-head-svc" || len(got.Name) > 63 {
		t.Errorf("name = %q", got.Name)
	}
	// The identifier is a label value: KubeRay keeps its last 63 characters.
	if id := got.Labels[labels.Identifier]; id != long+"-head" {
		t.Errorf("identifier = %q", id)
	}
}

func TestRayServiceServeService(t *testing.T) {
	servePorts := []corev1.ServicePort{{Name: "serve", Port: 8000}, {Name: "serve-grpc", Port: 9000}}
	serveLabels := map[string]string{
		labels.OriginatedFromCRName: "svc", labels.OriginatedFromCRD: "RayService", labels.Serve: "svc-serve",
	}
	selector := map[string]string{labels.Cluster: "svc-abcde", labels.Serve: "true"}
	tests := []struct {
		name    string
		rs      *rayv1.RayService
		cluster *rayv1.RayCluster
		want    *corev1.Service
		wantErr string
	}{
		{
			name: "selects the cluster's serving Pods, the type is the RayService's",
			rs: newService(func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort
			}),
			cluster: servedCluster("svc-abcde").Obj(),
			want: &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "svc-serve-svc", Namespace: "ns", Labels: serveLabels, OwnerReferences: ownedBySvc},
				Spec:       corev1.ServiceSpec{Selector: selector, Ports: servePorts, Type: corev1.ServiceTypeNodePort},
			},
		},
		{
			name: "the user's serveService is the base; its same-named ports, name and type win, our labels win",
			rs: newService(func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort
				rs.Spec.ServeService = &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: "my-serve", Namespace: "elsewhere",
						Labels:      map[string]string{"team": "a", labels.Serve: "mine"},
						Annotations: map[string]string{"lb": "internal"}},
					Spec: corev1.ServiceSpec{
						Type:     corev1.ServiceTypeLoadBalancer,
						Selector: map[string]string{"app": "ignored"},
						Ports: []corev1.ServicePort{
							{Name: "serve-grpc", Port: 9000, AppProtocol: ptr.To("kubernetes.io/h2c")},
							{Name: "other", Port: 1234},
						},
					},
				}
			}),
			cluster: servedCluster("svc-abcde").Obj(),
			want: &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "my-serve", Namespace: "ns",
					Labels:      map[string]string{"team": "a", labels.OriginatedFromCRName: "svc", labels.OriginatedFromCRD: "RayService", labels.Serve: "svc-serve"},
					Annotations: map[string]string{"lb": "internal"}, OwnerReferences: ownedBySvc},
				Spec: corev1.ServiceSpec{Selector: selector, Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{
					{Name: "serve", Port: 8000}, {Name: "serve-grpc", Port: 9000, AppProtocol: ptr.To("kubernetes.io/h2c")},
				}},
			},
		},
		{
			name: "a head without serve ports takes the user's ports as they are",
			rs: newService(func(rs *rayv1.RayService) {
				rs.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
			}),
			cluster: newCluster("svc-abcde").Obj(),
			want: &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "svc-serve-svc", Namespace: "ns", Labels: serveLabels,
					Annotations: map[string]string{}, OwnerReferences: ownedBySvc},
				Spec: corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
			},
		},
		{
			name:    "no serve port and no serveService",
			rs:      newService(),
			cluster: newCluster("svc-abcde").Obj(),
			wantErr: `build serve Service of RayService ns/svc: the head container has no port named "serve" or "serve-<protocol>", so Serve traffic has nowhere to go`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.rs.DeepCopy()
			got, err := RayServiceServeService(tt.rs, tt.cluster)
			checkError(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("RayServiceServeService (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.rs); diff != "" {
				t.Errorf("the RayService was modified:\n%s", diff)
			}
		})
	}
}

func TestClusterServeService(t *testing.T) {
	withUserService := newService(func(rs *rayv1.RayService) {
		rs.Spec.RayClusterSpec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort
		rs.Spec.ServeService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "my-serve"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	})
	tests := []struct {
		name    string
		rs      *rayv1.RayService
		cluster *rayv1.RayCluster
		want    *corev1.Service
		wantErr string
	}{
		{
			name:    "named and labelled after the cluster, owned by it; the user's serveService is ignored",
			rs:      withUserService,
			cluster: servedCluster("svc-abcde").Obj(),
			want: &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "svc-abcde-serve-svc", Namespace: "ns",
					Labels: map[string]string{
						labels.OriginatedFromCRName: "svc-abcde", labels.OriginatedFromCRD: "RayService", labels.Serve: "svc-abcde-serve",
					},
					OwnerReferences: ownedByCluster("svc-abcde")},
				Spec: corev1.ServiceSpec{
					Selector: map[string]string{labels.Cluster: "svc-abcde", labels.Serve: "true"},
					Ports:    []corev1.ServicePort{{Name: "serve", Port: 8000}, {Name: "serve-grpc", Port: 9000}},
					Type:     corev1.ServiceTypeNodePort,
				},
			},
		},
		{
			name:    "no serve port",
			rs:      withUserService,
			cluster: newCluster("svc-abcde").Obj(),
			wantErr: `build serve Service of RayCluster ns/svc-abcde for RayService svc: the head container has no port named "serve" or "serve-<protocol>", so Serve traffic has nowhere to go`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ClusterServeService(tt.rs, tt.cluster)
			checkError(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ClusterServeService (-want +got):\n%s", diff)
			}
		})
	}
}

// checkError fails unless err's message is exactly want ("" meaning no error).
func checkError(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Fatalf("no error, want %q", want)
	case want != "" && err.Error() != want:
		t.Fatalf("wrong error\n got: %s\nwant: %s", err, want)
	}
}
