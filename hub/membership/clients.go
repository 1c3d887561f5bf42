package membership

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// Clients hands out clients of engaged members by MemberCluster name, for the hub's
// propagation and aggregation. A member that is not engaged yields an error wrapping
// multicluster.ErrClusterNotFound, which callers treat as "unreachable", never as "gone".
type Clients struct {
	clusters ClusterGetter
}

// NewClients returns Clients over clusters (the hub's multicluster-runtime manager).
func NewClients(clusters ClusterGetter) *Clients {
	return &Clients{clusters: clusters}
}

// Reader returns an uncached reader of the member named name, for objects the hub may read
// only in one namespace (its traffic Role there): a cached read would start a cluster-wide
// informer the member refuses.
func (c *Clients) Reader(ctx context.Context, name string) (client.Reader, error) {
	if name == "" {
		return nil, errors.New("member name is empty")
	}
	cl, err := c.clusters.GetCluster(ctx, multicluster.ClusterName(name))
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", name, err)
	}
	return cl.GetAPIReader(), nil
}

// Client returns the cached client of the member named name.
func (c *Clients) Client(ctx context.Context, name string) (client.Client, error) {
	// The empty name is multicluster-runtime's local cluster, the hub itself: a member client
	// must never write there.
	if name == "" {
		return nil, errors.New("member name is empty")
	}
	cl, err := c.clusters.GetCluster(ctx, multicluster.ClusterName(name))
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", name, err)
	}
	return cl.GetClient(), nil
}
