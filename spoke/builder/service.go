package builder

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// serviceAppProtocol is the appProtocol KubeRay sets on the head Service's ports.
const serviceAppProtocol = "tcp"

// Named ports of a Ray head.
const (
	clientPortName    = "client"
	gcsServerPortName = "gcs-server"
	dashboardPortName = "dashboard"
)

// namedPort is one port of the head container as the Services expose it.
type namedPort struct {
	name string
	port int32
}

// headPorts are the head container's ports, by name (unnamed ones become "<port>-port"), in name
// order. A container without ports gets Ray's standard set; the metrics port is always included.
func headPorts(rc *rayv1.RayCluster) []namedPort {
	byName := map[string]int32{}
	if cs := rc.Spec.HeadGroupSpec.Template.Spec.Containers; len(cs) > 0 {
		for _, p := range cs[0].Ports {
			name := p.Name
			if name == "" {
				name = fmt.Sprintf("%d-port", p.ContainerPort)
			}
			byName[name] = p.ContainerPort
		}
	}
	if len(byName) == 0 {
		byName = map[string]int32{
			clientPortName:    defaultClientPort,
			gcsServerPortName: defaultGCSPort,
			dashboardPortName: defaultDashboardPort,
			metricsPortName:   defaultMetricsPort,
			servePortName:     defaultServePort,
		}
	}
	if _, ok := byName[metricsPortName]; !ok {
		byName[metricsPortName] = defaultMetricsPort
	}
	out := make([]namedPort, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, namedPort{name: name, port: byName[name]})
	}
	return out
}

// headServiceSelector selects the head Pod. Its keys are fixed; a head template that sets
// app.kubernetes.io/name changes that value, because the Pod carries the user's value too.
func headServiceSelector(rc *rayv1.RayCluster) map[string]string {
	sel := map[string]string{
		labels.Cluster:    rc.Name,
		labels.NodeType:   string(rayv1.HeadNode),
		labels.Identifier: identifier(rc.Name, rayv1.HeadNode),
		labels.AppName:    labels.ApplicationNameValue,
		labels.CreatedBy:  labels.CreatedByValue,
	}
	if v, ok := rc.Spec.HeadGroupSpec.Template.Labels[labels.AppName]; ok {
		sel[labels.AppName] = v
	}
	return sel
}

// HeadService builds the Service workers and clients reach the head through. A user-supplied
// spec.headGroupSpec.headService is the base (its selector is replaced, our labels and
// annotations win, the head's ports are appended); otherwise the Service is headless unless
// ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE is set or a non-ClusterIP serviceType is asked for.
func HeadService(rc *rayv1.RayCluster, opts Options) (*corev1.Service, error) {
	name, err := HeadServiceName(rc)
	if err != nil {
		return nil, err
	}
	selector := headServiceSelector(rc)
	annotations := maps.Clone(rc.Spec.HeadServiceAnnotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	svcType := rc.Spec.HeadGroupSpec.ServiceType
	ports := []corev1.ServicePort{}
	for _, p := range headPorts(rc) {
		ports = append(ports, corev1.ServicePort{Name: p.name, Port: p.port, AppProtocol: ptr.To(serviceAppProtocol)})
	}

	var svc *corev1.Service
	if custom := rc.Spec.HeadGroupSpec.HeadService; custom != nil {
		svc = custom.DeepCopy()
		svc.Spec.Selector = selector
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		maps.Copy(svc.Annotations, annotations)
		svc.Spec.Ports = append(svc.Spec.Ports, ports...)
		if svc.Labels == nil {
			svc.Labels = map[string]string{}
		}
		maps.Copy(svc.Labels, selector)
		if svc.Name == "" {
			svc.Name = name
		}
		svc.Namespace = rc.Namespace
		if svc.Spec.Type == "" {
			svc.Spec.Type = svcType
		}
	} else {
		svc = &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Namespace:   rc.Namespace,
				Labels:      maps.Clone(selector),
				Annotations: annotations,
			},
			Spec: corev1.ServiceSpec{Selector: selector, Ports: ports, Type: svcType},
		}
		if !opts.HeadServiceClusterIP && (svcType == "" || svcType == corev1.ServiceTypeClusterIP) {
			// A cluster has one head, so a virtual IP buys nothing; publishing the address before
			// the head is ready lets workers and clients start connecting as early as possible.
			svc.Spec.ClusterIP = corev1.ClusterIPNone
			svc.Spec.PublishNotReadyAddresses = true
		}
	}
	if err := setControllerRef(svc, rc); err != nil {
		return nil, fmt.Errorf("build head Service of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	return svc, nil
}

// isServePort reports whether a port carries Ray Serve traffic: "serve" or "serve-<protocol>".
func isServePort(name string) bool {
	return name == servePortName || strings.HasPrefix(name, servePortName+"-")
}

// ServeService builds the serve Service of a standalone RayCluster (annotation
// ray.io/enable-serve-service=true). It selects every Pod of the cluster and exposes the head's
// serve ports; it fails when the head has none, as KubeRay does.
func ServeService(rc *rayv1.RayCluster) (*corev1.Service, error) {
	var ports []corev1.ServicePort
	for _, p := range headPorts(rc) {
		if isServePort(p.name) {
			ports = append(ports, corev1.ServicePort{Name: p.name, Port: p.port})
		}
	}
	if len(ports) == 0 {
		return nil, fmt.Errorf("build serve Service of RayCluster %s/%s: the head container has no port named %q or %q",
			rc.Namespace, rc.Name, servePortName, servePortName+"-<protocol>")
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ServeServiceName(rc),
			Namespace: rc.Namespace,
			Labels: map[string]string{
				labels.OriginatedFromCRName: rc.Name,
				labels.OriginatedFromCRD:    string(creatorRayCluster),
				labels.Serve:                rc.Name + "-serve",
			},
		},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{labels.Cluster: rc.Name},
			Ports:    ports,
			Type:     rc.Spec.HeadGroupSpec.ServiceType,
		},
	}
	if err := setControllerRef(svc, rc); err != nil {
		return nil, fmt.Errorf("build serve Service of RayCluster %s/%s: %w", rc.Namespace, rc.Name, err)
	}
	return svc, nil
}

// HeadlessService builds the headless Service that gives multi-host workers stable DNS names for
// talking to each other. Addresses are published before readiness: peers must find each other to
// become ready at all.
func HeadlessService(rc *rayv1.RayCluster) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:      HeadlessServiceName(rc),
			Namespace: rc.Namespace,
			Labels:    map[string]string{labels.HeadlessWorkerService: rc.Name},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector: map[string]string{
				labels.Cluster:  rc.Name,
				labels.NodeType: string(rayv1.WorkerNode),
			},
			Type:                     corev1.ServiceTypeClusterIP,
			PublishNotReadyAddresses: true,
		},
	}
	// A fresh object has no owner, so this cannot fail.
	_ = setControllerRef(svc, rc)
	return svc
}

// ServeServiceEnabled reports whether a standalone RayCluster asks for its serve Service
// (annotation ray.io/enable-serve-service, exactly "true").
func ServeServiceEnabled(rc *rayv1.RayCluster) bool {
	return rc.Annotations[labels.EnableServeService] == labels.True
}
