package builder

import (
	"fmt"
	"strings"
	"unicode"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// Name limits KubeRay applies. Object names are cut to leave room for the "-worker-" suffix plus
// the five random characters of a generated name; label values are cut to the label limit.
const (
	maxShortNameLength   = 50
	maxLabelValueLength  = 63
	maxPodNamePrefixSize = 50
	replicaSuffixLength  = 5
)

// Fixed name parts KubeRay uses.
const (
	headServiceSuffix     = "head-svc"
	serveServiceSuffix    = "serve-svc"
	headlessServiceSuffix = "headless"
	ingressSuffix         = "head-ingress"
	redisCleanupSuffix    = "redis-cleanup"
)

// shortName makes s usable as a name the way KubeRay does: an over-long value keeps its last
// characters (the front is dropped), and a leading digit or punctuation is replaced by "r".
func shortName(s string) string {
	if len(s) > maxShortNameLength {
		s = s[len(s)-maxShortNameLength:]
	}
	if s == "" {
		return s
	}
	first := rune(s[0])
	if unicode.IsDigit(first) || unicode.IsPunct(first) {
		s = "r" + s[1:]
	}
	return s
}

// shortLabel makes s usable as a label value the way KubeRay does: it keeps the last 63
// characters and replaces a leading punctuation character by "r".
func shortLabel(s string) string {
	if len(s) > maxLabelValueLength {
		s = s[len(s)-maxLabelValueLength:]
	}
	if s != "" && unicode.IsPunct(rune(s[0])) {
		s = "r" + s[1:]
	}
	return s
}

// podName is the Name or GenerateName of a Pod: the prefix cut to 50 characters, then
// "-<node type>", lower-cased, with a trailing "-" when the API server generates the suffix.
func podName(prefix string, nodeType rayv1.RayNodeType, generated bool) string {
	if len(prefix) > maxPodNamePrefixSize {
		prefix = prefix[:maxPodNamePrefixSize]
	}
	name := strings.ToLower(prefix + "-" + string(nodeType))
	if generated {
		name += "-"
	}
	return name
}

// identifier is the ray.io/identifier label value of a node type in a cluster.
func identifier(clusterName string, nodeType rayv1.RayNodeType) string {
	return shortLabel(clusterName + "-" + string(nodeType))
}

// HeadServiceName is the name of the head Service: spec.headGroupSpec.headService.metadata.name
// when set, else "<cluster>-head-svc". KubeRay never shortens it (cluster names are limited to
// 53 characters by validation). The error is kept for callers that treat naming as fallible.
func HeadServiceName(rc *rayv1.RayCluster) (string, error) {
	if hs := rc.Spec.HeadGroupSpec.HeadService; hs != nil && hs.Name != "" {
		return hs.Name, nil
	}
	return rc.Name + "-" + headServiceSuffix, nil
}

// ServeServiceName is the name of a standalone RayCluster's serve Service, "<cluster>-serve-svc".
func ServeServiceName(rc *rayv1.RayCluster) string {
	return rc.Name + "-" + serveServiceSuffix
}

// HeadlessServiceName is the name of the headless Service of multi-host groups, "<cluster>-headless".
func HeadlessServiceName(rc *rayv1.RayCluster) string {
	return rc.Name + "-" + headlessServiceSuffix
}

// IngressName is the name of the dashboard Ingress, "<cluster>-head-ingress" shortened.
func IngressName(rc *rayv1.RayCluster) string {
	return shortName(rc.Name + "-" + ingressSuffix)
}

// RedisCleanupJobName is the name of the GCS FT Redis cleanup Job, "<cluster>-redis-cleanup"
// cut to the label-value limit.
func RedisCleanupJobName(rc *rayv1.RayCluster) string {
	return shortLabel(rc.Name + "-" + redisCleanupSuffix)
}

// AuthSecretName is the Secret the Ray containers read their auth token from:
// spec.authOptions.secretName when set, else the shortened cluster name (created by the operator).
func AuthSecretName(rc *rayv1.RayCluster) string {
	if ao := rc.Spec.AuthOptions; ao != nil && ao.SecretName != nil && *ao.SecretName != "" {
		return *ao.SecretName
	}
	return shortName(rc.Name)
}

// headGroupServiceAccount is the head template's serviceAccountName, else the cluster name.
func headGroupServiceAccount(rc *rayv1.RayCluster) string {
	if sa := rc.Spec.HeadGroupSpec.Template.Spec.ServiceAccountName; sa != "" {
		return sa
	}
	return rc.Name
}

// AutoscalerServiceAccountName is the ServiceAccount the autoscaling head Pod runs as.
func AutoscalerServiceAccountName(rc *rayv1.RayCluster) string {
	return shortName(headGroupServiceAccount(rc))
}

// AutoscalerRoleName is the name of the autoscaler Role and RoleBinding.
func AutoscalerRoleName(rc *rayv1.RayCluster) string {
	return shortName(rc.Name)
}

// ReplicaGroupName returns a new unique name for a multi-host replica of groupName:
// "<group>-<5 random characters>", as KubeRay generates it.
func ReplicaGroupName(groupName string) string {
	return fmt.Sprintf("%s-%s", groupName, rand.String(replicaSuffixLength))
}

// headFQDN is the fully qualified DNS name of the head Service that workers connect to.
func headFQDN(rc *rayv1.RayCluster, opts Options) string {
	name, _ := HeadServiceName(rc)
	return fmt.Sprintf("%s.%s.svc.%s", name, rc.Namespace, opts.ClusterDomain)
}

// shortHost is the first DNS label of an FQDN, the deprecated RAY_IP value.
func shortHost(fqdn string) string {
	host, _, _ := strings.Cut(fqdn, ".")
	return host
}

// HeadServiceLabels are the labels that find a cluster's head Service among the namespace's
// Services (the RayService's own head Service carries no ray.io/cluster label, so it is not
// mistaken for one).
func HeadServiceLabels(rc *rayv1.RayCluster) map[string]string {
	return map[string]string{
		labels.Cluster:    rc.Name,
		labels.NodeType:   string(rayv1.HeadNode),
		labels.Identifier: identifier(rc.Name, rayv1.HeadNode),
	}
}
