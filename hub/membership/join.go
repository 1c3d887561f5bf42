package membership

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
)

// ClusterGetter returns the engaged member clusters; a multicluster-runtime manager is one.
type ClusterGetter interface {
	// GetCluster returns the cluster engaged under name, or an error wrapping
	// multicluster.ErrClusterNotFound.
	GetCluster(ctx context.Context, name multicluster.ClusterName) (cluster.Cluster, error)
}

// join checks the member's Secret on the hub and whether the provider engaged it, returning the
// engaged cluster when it did. The Secret must follow the join contract (see
// fleetv1alpha1.KubeconfigSecretLabel) and be named like its MemberCluster: the provider names
// each engaged cluster after its Secret, so the MemberCluster name, the provider's cluster name
// and the Secret name are one and the same everywhere (bindings, policies, the CLI). Checking
// the Secret too (rather than asking the provider only) makes Joined say why a member is not
// engaged, and turns it False as soon as the Secret goes even if the provider has not
// disengaged yet.
func join(ctx context.Context, hub client.Reader, clusters ClusterGetter, hubNamespace string,
	mc *fleetv1alpha1.MemberCluster) (JoinState, cluster.Cluster, error) {
	ref := mc.Spec.KubeconfigSecretRef
	if ref.Name != mc.Name {
		return notJoined(fleetv1alpha1.ReasonKubeconfigInvalid, fmt.Sprintf(
			"spec.kubeconfigSecretRef.name is %q but must be %q: the hub names each member after its kubeconfig Secret",
			ref.Name, mc.Name)), nil, nil
	}
	if ref.Key != "" && ref.Key != fleetv1alpha1.DefaultKubeconfigKey {
		return notJoined(fleetv1alpha1.ReasonKubeconfigInvalid, fmt.Sprintf(
			"spec.kubeconfigSecretRef.key is %q but the hub reads key %q only", ref.Key, fleetv1alpha1.DefaultKubeconfigKey)), nil, nil
	}
	var secret corev1.Secret
	key := client.ObjectKey{Namespace: hubNamespace, Name: ref.Name}
	if err := hub.Get(ctx, key, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return notJoined(fleetv1alpha1.ReasonKubeconfigSecretNotFound,
				fmt.Sprintf("Secret %s not found", key)), nil, nil
		}
		return JoinState{}, nil, fmt.Errorf("reading kubeconfig Secret %s of member %s: %w", key, mc.Name, err)
	}
	if secret.DeletionTimestamp != nil {
		return notJoined(fleetv1alpha1.ReasonKubeconfigSecretNotFound, fmt.Sprintf("Secret %s is being deleted", key)), nil, nil
	}
	if secret.Labels[fleetv1alpha1.KubeconfigSecretLabel] != "true" {
		return notJoined(fleetv1alpha1.ReasonKubeconfigInvalid, fmt.Sprintf(
			"Secret %s lacks the label %s=true, so the hub does not engage it", key, fleetv1alpha1.KubeconfigSecretLabel)), nil, nil
	}
	data := secret.Data[fleetv1alpha1.DefaultKubeconfigKey]
	if len(data) == 0 {
		return notJoined(fleetv1alpha1.ReasonKubeconfigSecretNotFound,
			fmt.Sprintf("Secret %s has no key %q", key, fleetv1alpha1.DefaultKubeconfigKey)), nil, nil
	}
	cfg, err := hubaccess.RESTConfig(data)
	if err != nil {
		if refused, ok := errors.AsType[*hubaccess.RefusedKubeconfig](err); ok {
			return notJoined(fleetv1alpha1.ReasonKubeconfigRefused,
				fmt.Sprintf("Secret %s: kubeconfig refused: %v", key, refused)), nil, nil
		}
		return notJoined(fleetv1alpha1.ReasonKubeconfigInvalid, fmt.Sprintf("Secret %s: %v", key, err)), nil, nil
	}
	bootstrap := bootstrapOf(cfg.BearerToken)
	cl, err := clusters.GetCluster(ctx, multicluster.ClusterName(mc.Name))
	if err != nil {
		if errors.Is(err, multicluster.ErrClusterNotFound) {
			// The provider engages asynchronously (and retries failures with backoff); the
			// resync notices when it has.
			js := notJoined(fleetv1alpha1.ReasonEngaging, fmt.Sprintf(
				"Secret %s is valid but the hub has not engaged the member yet (see the hub's kubeconfig-provider log)",
				key))
			js.Bootstrap = bootstrap
			return js, nil, nil
		}
		return JoinState{}, nil, fmt.Errorf("getting engaged cluster of member %s: %w", mc.Name, err)
	}
	return JoinState{Joined: true, Bootstrap: bootstrap}, cl, nil
}

func notJoined(reason, message string) JoinState {
	return JoinState{Reason: reason, Message: message}
}

// probe reads the member's ClusterReport straight from its API server (no cache: the point is
// to find out whether the server answers now), bounded by timeout. A missing report, or a
// missing ClusterReport CRD, is an answer: the member is reachable but has no agent.
func probe(ctx context.Context, cl cluster.Cluster, timeout time.Duration) (*fleetv1alpha1.ClusterReport, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var report fleetv1alpha1.ClusterReport
	err := cl.GetAPIReader().Get(ctx, client.ObjectKey{Name: fleetv1alpha1.ClusterReportName}, &report)
	switch {
	case err == nil:
		return &report, false, nil
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, true, nil
	default:
		return nil, false, fmt.Errorf("reading ClusterReport %s: %w", fleetv1alpha1.ClusterReportName, err)
	}
}
