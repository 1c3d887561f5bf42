package rayservice

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// EndpointSliceCache is how the spoke caches EndpointSlices. Serve endpoints are counted as
// KubeRay counts them, from every slice labelled kubernetes.io/service-name=<serve Service>,
// whoever made it (the EndpointSlice controller, a mesh, a user, an MCS implementation), and
// only the service-name label is common to all of those. So every slice that names a Service
// is cached, trimmed by TrimEndpointSlice to the little the reconciler reads.
func EndpointSliceCache() (cache.ByObject, error) {
	req, err := k8slabels.NewRequirement(discoveryv1.LabelServiceName, selection.Exists, nil)
	if err != nil {
		return cache.ByObject{}, fmt.Errorf("building the %s selector: %w", discoveryv1.LabelServiceName, err)
	}
	return cache.ByObject{Label: k8slabels.NewSelector().Add(*req), Transform: TrimEndpointSlice}, nil
}

// TrimEndpointSlice is the spoke's cache transform for EndpointSlices. The reconciler reads a
// slice's labels and, per endpoint, its conditions and target Pod; addresses, ports, topology
// and hints are most of a slice's size and would make caching every slice of a large member
// cost what caching its Pods does. Cached slices are only read, never written back.
func TrimEndpointSlice(obj any) (any, error) {
	slice, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	slice.ManagedFields = nil
	slice.Annotations = nil
	slice.Ports = nil
	endpoints := make([]discoveryv1.Endpoint, len(slice.Endpoints))
	for i, ep := range slice.Endpoints {
		endpoints[i] = discoveryv1.Endpoint{Conditions: ep.Conditions}
		if ref := ep.TargetRef; ref != nil {
			endpoints[i].TargetRef = &corev1.ObjectReference{
				Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID,
			}
		}
	}
	slice.Endpoints = endpoints
	return slice, nil
}
