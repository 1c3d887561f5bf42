package status

import (
	"errors"
	"fmt"
	"strconv"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// Errors that stop Compute. KubeRay writes no status at all in these cases and retries, because
// head info cannot be told without guessing; the reconciler should do the same.
var (
	// ErrMultipleHeadPods means more than one Pod carries the head node-type label.
	ErrMultipleHeadPods = errors.New("found multiple head Pods")
	// ErrHeadServiceNotFound means the head Service is not (yet) observed.
	ErrHeadServiceNotFound = errors.New("head Service not found")
	// ErrHeadServiceNoIP means the head Service has no cluster IP (not even "None").
	ErrHeadServiceNoIP = errors.New("head Service has no cluster IP")
)

// findHeadPod returns the single head Pod among pods, nil when there is none.
func findHeadPod(rc *rayv1.RayCluster, pods []corev1.Pod) (*corev1.Pod, error) {
	var head *corev1.Pod
	for i := range pods {
		if pods[i].Labels[labels.NodeType] != string(rayv1.HeadNode) {
			continue
		}
		if head != nil {
			return nil, fmt.Errorf("RayCluster %s/%s: %w: %s and %s",
				rc.Namespace, rc.Name, ErrMultipleHeadPods, head.Name, pods[i].Name)
		}
		head = &pods[i]
	}
	return head, nil
}

// headInfo tells where the head runs. A headless head Service has no address of its own, so
// the head Pod's IP stands in as the service IP (empty until the Pod has one).
func headInfo(rc *rayv1.RayCluster, head *corev1.Pod, svc *corev1.Service) (rayv1.HeadInfo, error) {
	var info rayv1.HeadInfo
	if head != nil {
		info.PodIP, info.PodName = head.Status.PodIP, head.Name
	}
	switch {
	case svc == nil:
		return info, fmt.Errorf("RayCluster %s/%s: %w", rc.Namespace, rc.Name, ErrHeadServiceNotFound)
	case svc.Spec.ClusterIP == "":
		return info, fmt.Errorf("RayCluster %s/%s: Service %s: %w", rc.Namespace, rc.Name, svc.Name, ErrHeadServiceNoIP)
	case svc.Spec.ClusterIP == corev1.ClusterIPNone:
		info.ServiceIP = info.PodIP
	default:
		info.ServiceIP = svc.Spec.ClusterIP
	}
	info.ServiceName = svc.Name
	return info, nil
}

// endpoints maps each named head Service port to the port a client should use: the node port
// when there is one (reachable from outside), else the target port, numeric or named. Unnamed
// ports are left out since the map is keyed by name. Nil when nothing qualifies, so that an
// empty map does not differ from the omitted field read back from the API server.
func endpoints(svc *corev1.Service) map[string]string {
	if svc == nil {
		return nil
	}
	var out map[string]string
	for _, p := range svc.Spec.Ports {
		if p.Name == "" {
			continue
		}
		var v string
		switch {
		case p.NodePort != 0:
			v = strconv.Itoa(int(p.NodePort))
		case p.TargetPort.IntVal != 0:
			v = strconv.Itoa(int(p.TargetPort.IntVal))
		case p.TargetPort.StrVal != "":
			v = p.TargetPort.StrVal
		default:
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[p.Name] = v
	}
	return out
}
