package status

import (
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// ReadyEndpoints counts the Pods behind a Service's EndpointSlices that are ready to serve,
// whoever made the slices, as KubeRay does: Ready alone decides, unset meaning not ready. A
// dual-stack Service lists each Pod once per IP family, so Pods are counted by UID; endpoints
// without a target Pod are not counted.
func ReadyEndpoints(slices []discoveryv1.EndpointSlice) int32 {
	pods := map[types.UID]struct{}{}
	for i := range slices {
		for _, ep := range slices[i].Endpoints {
			if !ptr.Deref(ep.Conditions.Ready, false) || ep.TargetRef == nil || ep.TargetRef.UID == "" {
				continue
			}
			pods[ep.TargetRef.UID] = struct{}{}
		}
	}
	return int32(min(len(pods), 1<<31-1)) //nolint:gosec // bounded just above
}
