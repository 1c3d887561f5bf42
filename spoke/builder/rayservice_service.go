package builder

import (
	"fmt"
	"maps"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// rayServiceKind is the GroupVersionKind of a RayService, for owner references.
var rayServiceKind = rayv1.GroupVersion.WithKind("RayService")

// RayServiceHeadServiceName is the name of a RayService's own head Service, "<rs>-head-svc". It
// follows whichever cluster is serving, so clients keep one address across upgrades.
func RayServiceHeadServiceName(rs *rayv1.RayService) string {
	return rs.Name + "-" + headServiceSuffix
}

// RayServiceServeServiceName is the name of a RayService's serve Service: spec.serveService's
// name when given, else "<rs>-serve-svc".
func RayServiceServeServiceName(rs *rayv1.RayService) string {
	if s := rs.Spec.ServeService; s != nil && s.Name != "" {
		return s.Name
	}
	return rs.Name + "-" + serveServiceSuffix
}

// ClusterServeServiceName is the name of the serve Service of one of a RayService's clusters,
// "<rc>-serve-svc": an incremental upgrade routes traffic to each cluster through its own.
func ClusterServeServiceName(rc *rayv1.RayCluster) string {
	return ServeServiceName(rc)
}

// ServePort is the port Ray Serve listens on in rc: the head container's port named "serve",
// else Ray's default 8000.
func ServePort(rc *rayv1.RayCluster) int32 {
	if rc == nil {
		return defaultServePort
	}
	if cs := rc.Spec.HeadGroupSpec.Template.Spec.Containers; len(cs) > 0 {
		for _, p := range cs[0].Ports {
			if p.Name == servePortName {
				return p.ContainerPort
			}
		}
	}
	return defaultServePort
}

// DashboardPort is the port of svc named "dashboard", where a head Service exposes the Ray
// dashboard; ok is false when svc has none.
func DashboardPort(svc *corev1.Service) (port int32, ok bool) {
	if svc == nil {
		return 0, false
	}
	for _, p := range svc.Spec.Ports {
		if p.Name == dashboardPortName {
			return p.Port, true
		}
	}
	return 0, false
}

// RayServiceHeadService builds the RayService's head Service, selecting rc's head Pod: the head
// Service rc would have (same selector, ports and type, including a user's headService base),
// renamed after the RayService, labelled as the RayService's rather than rc's (so it is not
// mistaken for rc's own head Service), and controlled by rs. rc's headServiceAnnotations are not
// carried over, as in KubeRay.
func RayServiceHeadService(rs *rayv1.RayService, rc *rayv1.RayCluster, opts Options) (*corev1.Service, error) {
	base := rc.DeepCopy()
	base.Spec.HeadServiceAnnotations = nil
	svc, err := HeadService(base, opts.withDefaults())
	if err != nil {
		return nil, fmt.Errorf("build head Service of RayService %s/%s for RayCluster %s: %w", rs.Namespace, rs.Name, rc.Name, err)
	}
	svc.Name = RayServiceHeadServiceName(rs)
	svc.Namespace = rs.Namespace
	svc.Labels = map[string]string{
		labels.OriginatedFromCRName: rs.Name,
		labels.OriginatedFromCRD:    string(creatorRayService),
		labels.NodeType:             string(rayv1.HeadNode),
		labels.Identifier:           identifier(rs.Name, rayv1.HeadNode),
	}
	svc.OwnerReferences = controllerRefs(rs, rayServiceKind)
	return svc, nil
}

// RayServiceServeService builds the RayService's serve Service: it selects the Pods of rc that
// run a healthy Serve proxy (ray.io/serve=true) and exposes the head's serve ports ("serve",
// "serve-<protocol>"). A user's spec.serveService is the base, as in KubeRay: its selector is
// replaced, our labels win, a port of the same name keeps the user's definition (an appProtocol
// for gRPC, say), and its name and type are kept when set. It fails when the head has no serve
// port and the user gave no Service to take ports from.
func RayServiceServeService(rs *rayv1.RayService, rc *rayv1.RayCluster) (*corev1.Service, error) {
	ports := servePorts(rc)
	custom := rs.Spec.ServeService
	if len(ports) == 0 && custom == nil {
		return nil, fmt.Errorf("build serve Service of RayService %s/%s: %w", rs.Namespace, rs.Name, errNoServePort)
	}
	svcLabels := serveServiceLabels(rs.Name)
	selector := serveSelector(rc)
	svcType := rs.Spec.RayClusterSpec.HeadGroupSpec.ServiceType

	var svc *corev1.Service
	if custom != nil {
		svc = custom.DeepCopy()
		svc.Spec.Selector = selector
		if svc.Annotations == nil {
			svc.Annotations = map[string]string{}
		}
		if len(ports) > 0 {
			svc.Spec.Ports = preferUserPorts(ports, svc.Spec.Ports)
		}
		if svc.Labels == nil {
			svc.Labels = map[string]string{}
		}
		maps.Copy(svc.Labels, svcLabels)
		if svc.Name == "" {
			svc.Name = RayServiceServeServiceName(rs)
		}
		if svc.Spec.Type == "" {
			svc.Spec.Type = svcType
		}
	} else {
		svc = &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: RayServiceServeServiceName(rs), Labels: svcLabels},
			Spec:       corev1.ServiceSpec{Selector: selector, Ports: ports, Type: svcType},
		}
	}
	// The user's namespace is ignored: the Service lives with the RayService.
	svc.Namespace = rs.Namespace
	svc.OwnerReferences = controllerRefs(rs, rayServiceKind)
	return svc, nil
}

// ClusterServeService builds the serve Service of one of rs's clusters, which an incremental
// upgrade's HTTPRoute sends that cluster's share of the traffic to. It is named and labelled
// after rc, selects rc's serving Pods, takes its type from rs, ignores spec.serveService, and is
// controlled by rc, so it goes away with the cluster.
func ClusterServeService(rs *rayv1.RayService, rc *rayv1.RayCluster) (*corev1.Service, error) {
	ports := servePorts(rc)
	if len(ports) == 0 {
		return nil, fmt.Errorf("build serve Service of RayCluster %s/%s for RayService %s: %w",
			rc.Namespace, rc.Name, rs.Name, errNoServePort)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ClusterServeServiceName(rc),
			Namespace:       rs.Namespace,
			Labels:          serveServiceLabels(rc.Name),
			OwnerReferences: controllerRefs(rc, rayv1.GroupVersion.WithKind("RayCluster")),
		},
		Spec: corev1.ServiceSpec{
			Selector: serveSelector(rc),
			Ports:    ports,
			Type:     rs.Spec.RayClusterSpec.HeadGroupSpec.ServiceType,
		},
	}
	return svc, nil
}

// errNoServePort is why a serve Service cannot be built.
var errNoServePort = fmt.Errorf("the head container has no port named %q or %q, so Serve traffic has nowhere to go",
	servePortName, servePortName+"-<protocol>")

// servePorts are the head's serve ports as Service ports, in name order.
func servePorts(rc *rayv1.RayCluster) []corev1.ServicePort {
	var ports []corev1.ServicePort
	for _, p := range headPorts(rc) {
		if isServePort(p.name) {
			ports = append(ports, corev1.ServicePort{Name: p.name, Port: p.port})
		}
	}
	return ports
}

// serveServiceLabels label a serve Service made for a RayService: name is the RayService's
// (its own serve Service) or the cluster's (a per-cluster one).
func serveServiceLabels(name string) map[string]string {
	return map[string]string{
		labels.OriginatedFromCRName: name,
		labels.OriginatedFromCRD:    string(creatorRayService),
		labels.Serve:                name + "-serve",
	}
}

// serveSelector selects rc's Pods whose Serve proxy is healthy.
func serveSelector(rc *rayv1.RayCluster) map[string]string {
	return map[string]string{labels.Cluster: rc.Name, labels.Serve: labels.True}
}

// preferUserPorts returns ours with each port replaced by the user's port of the same name.
func preferUserPorts(ours, users []corev1.ServicePort) []corev1.ServicePort {
	byName := make(map[string]corev1.ServicePort, len(users))
	for _, p := range users {
		byName[p.Name] = p
	}
	out := make([]corev1.ServicePort, len(ours))
	for i, p := range ours {
		if u, ok := byName[p.Name]; ok {
			p = u
		}
		out[i] = p
	}
	return out
}

// controllerRefs are the owner references of a new object controlled by owner (of kind gvk).
// The objects built here are always new, or replace what the API server holds in full, so
// whatever references they started with (a user's Service template has none that survive the
// CRD's embedded metadata) are not kept.
func controllerRefs(owner metav1.Object, gvk schema.GroupVersionKind) []metav1.OwnerReference {
	return []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)}
}
