package floor

import (
	"context"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/hub/simmembers"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Watch opens, until ctx ends, the watches of the kinds the replay writes that a real hub's
// informers hold open, so that the API servers fan each write out as they would to the hub:
// on the hub, RayServices, RayServiceBindings and ControllerRevisions of namespace; on the
// member server, each member's RayServices in its backing namespace (one watch per member, as
// each simulated member has its own cache). The hub's other informers (MemberClusters,
// PlacementPolicies, Namespaces, ClusterReports) see no write during placement beyond the
// heartbeats and are left out. It returns once every watch has synced.
func Watch(ctx context.Context, hub, member *rest.Config, scheme *runtime.Scheme, namespace string, members []string) error {
	kinds := []client.Object{&rayv1.RayService{}, &fleetv1alpha1.RayServiceBinding{}, &appsv1.ControllerRevision{}}
	if err := watchKinds(ctx, hub, scheme, namespace, kinds); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	for _, m := range members {
		if err := watchKinds(ctx, member, scheme, simmembers.BackingNamespace(m, namespace), kinds[:1]); err != nil {
			return fmt.Errorf("member %s: %w", m, err)
		}
	}
	return nil
}

// watchKinds starts a cache of namespace holding kinds and waits for it to sync.
func watchKinds(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, namespace string, kinds []client.Object) error {
	ca, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{namespace: {}}})
	if err != nil {
		return fmt.Errorf("creating a cache of namespace %s: %w", namespace, err)
	}
	for _, k := range kinds {
		if _, err = ca.GetInformer(ctx, k); err != nil {
			return fmt.Errorf("watching %T in namespace %s: %w", k, namespace, err)
		}
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return fmt.Errorf("the cache of namespace %s did not sync", namespace)
	}
	return nil
}
