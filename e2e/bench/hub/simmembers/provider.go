package simmembers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// engageWorkers is how many members are engaged at once: the kubeconfig provider's Secret
// controller runs with the hub's worker count (16 by default).
const engageWorkers = 16

// Options configure the provider.
type Options struct {
	// Members are the members' names (see Names); no name may be another's followed by "-".
	Members []string
	// Namespaces are the member namespaces the hub may use (those of its RayServices): each
	// member's cache watches exactly these, mapped.
	Namespaces []string
	// Config reaches the backing member API server, as the hub's identity there.
	Config *rest.Config
	// ClusterOptions and RESTOptions are what the hub gives the kubeconfig provider (its
	// scheme; its user agent and client-side rate limits).
	ClusterOptions []cluster.Option
	RESTOptions    []func(*rest.Config) error
}

// Provider engages the simulated members when the manager starts it.
type Provider struct {
	opts Options

	mu sync.RWMutex
	// clusters are the engaged members; pending those made but not yet synced, which new
	// indexes must reach too.
	clusters map[string]*memberCluster
	pending  map[string]*memberCluster
	indexers []index
}

// index is a field index to apply to every member, current and future.
type index struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

var (
	_ multicluster.Provider         = &Provider{}
	_ multicluster.ProviderRunnable = &Provider{}
)

// New checks opts and returns a provider that has engaged nothing yet.
func New(opts Options) (*Provider, error) {
	if err := validateNames(opts.Members); err != nil {
		return nil, err
	}
	if opts.Config == nil {
		return nil, errors.New("simulated members: Options.Config is required")
	}
	if len(opts.Namespaces) == 0 {
		return nil, errors.New("simulated members: Options.Namespaces names none: the members' caches would watch nothing")
	}
	return &Provider{opts: opts, clusters: map[string]*memberCluster{}, pending: map[string]*memberCluster{}}, nil
}

// Start makes, starts and engages every member, engageWorkers at a time, then blocks until ctx
// ends; the members stop with it.
func (p *Provider) Start(ctx context.Context, aware multicluster.Aware) error {
	log := ctrl.LoggerFrom(ctx).WithName("simulated-members")
	names := make(chan string)
	errs := make(chan error, len(p.opts.Members))
	var wg sync.WaitGroup
	for range min(engageWorkers, len(p.opts.Members)) {
		wg.Go(func() {
			for name := range names {
				if err := p.engage(ctx, aware, name); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, name := range p.opts.Members {
		names <- name
	}
	close(names)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	if err := errors.Join(all...); err != nil {
		return err
	}
	log.Info("engaged every simulated member", "members", len(p.opts.Members))
	<-ctx.Done()
	return nil
}

// engage makes member name's cluster, starts it, waits for its cache and engages it.
func (p *Provider) engage(ctx context.Context, aware multicluster.Aware, name string) error {
	cl, err := newMemberCluster(name, p.opts)
	if err != nil {
		return err
	}
	p.mu.Lock()
	for _, idx := range p.indexers {
		if err := cl.GetFieldIndexer().IndexField(ctx, idx.obj, idx.field, idx.extract); err != nil {
			p.mu.Unlock()
			return fmt.Errorf("simulated member %s: index %s: %w", name, idx.field, err)
		}
	}
	p.pending[name] = cl
	p.mu.Unlock()
	go func() {
		if err := cl.Start(ctx); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "simulated member stopped", "cluster", name)
		}
	}()
	if !cl.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("simulated member %s: cache did not sync", name)
	}
	// Found by Get only once its cache has synced, as the kubeconfig provider does.
	p.mu.Lock()
	delete(p.pending, name)
	p.clusters[name] = cl
	p.mu.Unlock()
	if err := aware.Engage(ctx, multicluster.ClusterName(name), cl); err != nil {
		return fmt.Errorf("simulated member %s: engaging: %w", name, err)
	}
	return nil
}

// Get returns the member named name once it is made, else multicluster.ErrClusterNotFound.
func (p *Provider) Get(_ context.Context, name multicluster.ClusterName) (cluster.Cluster, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if cl, ok := p.clusters[string(name)]; ok {
		return cl, nil
	}
	return nil, multicluster.ErrClusterNotFound
}

// IndexField indexes field on every member, current and future.
func (p *Provider) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.indexers = append(p.indexers, index{obj: obj, field: field, extract: extract})
	for name, cl := range p.all() {
		if err := cl.GetFieldIndexer().IndexField(ctx, obj, field, extract); err != nil {
			return fmt.Errorf("simulated member %s: index %s: %w", name, field, err)
		}
	}
	return nil
}

// all are the engaged and the pending members; the caller holds p.mu.
func (p *Provider) all() map[string]*memberCluster {
	out := make(map[string]*memberCluster, len(p.clusters)+len(p.pending))
	maps.Copy(out, p.clusters)
	maps.Copy(out, p.pending)
	return out
}
