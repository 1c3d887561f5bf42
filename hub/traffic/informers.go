package traffic

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// ConfigOf returns the REST config of a traffic cluster: "" is the hub's own cluster, any
// other name a member's. A config that changes (a member engaged again with new credentials)
// replaces the informers made with the old one.
type ConfigOf func(ctx context.Context, cluster string) (*rest.Config, error)

// Informers keep, for each traffic cluster and namespace the hub routes in, informers on this
// hub's HTTPRoutes, backend Services and EndpointSlices there, and nothing else: a resync
// reads them without calling the API server. They are namespaced because the hub may hold only
// a Role in a traffic namespace. Until they have synced (or while the hub may not watch there)
// the caller reads uncached. Start them with the manager (they are a Runnable).
type Informers struct {
	configOf ConfigOf
	scheme   *runtime.Scheme
	hubName  string

	// changes carries the RayServices whose route or backends changed in a traffic cluster;
	// buffered, and a full buffer holds the informer that delivers.
	changes chan event.TypedGenericEvent[types.NamespacedName]

	mu sync.Mutex
	// ctx is the manager's, set by Start; informers made before then wait for it.
	ctx    context.Context
	caches map[informersKey]*namespaceCache
}

type informersKey struct{ cluster, namespace string }

// namespaceCache is the informers of one traffic cluster and namespace.
type namespaceCache struct {
	config    *rest.Config
	cache     cache.Cache
	informers []cache.Informer
	stop      context.CancelFunc
}

// NewInformers returns Informers reaching traffic clusters through configOf, decoding with
// scheme, and keeping what hub hubName made.
func NewInformers(configOf ConfigOf, scheme *runtime.Scheme, hubName string) *Informers {
	return &Informers{configOf: configOf, scheme: scheme, hubName: hubName, caches: map[informersKey]*namespaceCache{},
		changes: make(chan event.TypedGenericEvent[types.NamespacedName], 1024)}
}

// Changes carries the RayServices whose route or backends changed in a traffic cluster: the
// gateway's verdict on a route (its status), a backend edited or deleted by someone else, and
// the hub's own writes. A RayService whose route is read through synced informers is then
// reconciled on these instead of being polled.
func (i *Informers) Changes() <-chan event.TypedGenericEvent[types.NamespacedName] {
	return i.changes
}

// notify queues the RayService obj belongs to, by its origin labels; ctx ending drops it.
func (i *Informers) notify(ctx context.Context, obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	l := o.GetLabels()
	key := types.NamespacedName{Namespace: l[labels.OriginNamespace], Name: l[labels.OriginName]}
	if key.Namespace == "" || key.Name == "" {
		return
	}
	select {
	case i.changes <- event.TypedGenericEvent[types.NamespacedName]{Object: key}:
	case <-ctx.Done():
	}
}

// handler notifies on every change but the informer's resyncs (same resourceVersion).
func (i *Informers) handler(ctx context.Context) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { i.notify(ctx, obj) },
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(client.Object); ok {
				if n, ok := obj.(client.Object); ok && o.GetResourceVersion() == n.GetResourceVersion() {
					return
				}
			}
			i.notify(ctx, obj)
		},
		DeleteFunc: func(obj any) { i.notify(ctx, obj) },
	}
}

// Start records ctx for the informers it makes and stops them all when ctx ends.
func (i *Informers) Start(ctx context.Context) error {
	i.mu.Lock()
	i.ctx = ctx
	i.mu.Unlock()
	<-ctx.Done()
	i.mu.Lock()
	defer i.mu.Unlock()
	for k, c := range i.caches {
		c.stop()
		delete(i.caches, k)
	}
	return nil
}

// Reader returns a reader of this hub's routes and backends in namespace of cluster, backed by
// informers that have synced; ok is false until then (the first call starts them), and always
// on nil Informers. Reads of other objects through it fail.
func (i *Informers) Reader(ctx context.Context, cluster, namespace string) (r client.Reader, ok bool) {
	if i == nil {
		return nil, false
	}
	cfg, err := i.configOf(ctx, cluster)
	if err != nil {
		return nil, false
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	key := informersKey{cluster: cluster, namespace: namespace}
	c := i.caches[key]
	if c != nil && c.config != cfg {
		c.stop()
		delete(i.caches, key)
		c = nil
	}
	if c == nil {
		if i.ctx == nil {
			return nil, false
		}
		if c, err = i.start(cfg, namespace); err != nil {
			return nil, false
		}
		i.caches[key] = c
	}
	for _, inf := range c.informers {
		if !inf.HasSynced() {
			return nil, false
		}
	}
	return c.cache, true
}

// start makes and starts the informers of namespace in the cluster of cfg.
func (i *Informers) start(cfg *rest.Config, namespace string) (*namespaceCache, error) {
	ours, err := k8slabels.NewRequirement(labels.OriginHub, selection.Equals, []string{i.hubName})
	if err != nil {
		return nil, fmt.Errorf("traffic informers: %w", err)
	}
	backend, err := k8slabels.NewRequirement(labels.TrafficCluster, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("traffic informers: %w", err)
	}
	routes, backends := k8slabels.NewSelector().Add(*ours), k8slabels.NewSelector().Add(*ours, *backend)
	objs := []client.Object{&gwv1.HTTPRoute{}, &corev1.Service{}, &discoveryv1.EndpointSlice{}}
	c, err := cache.New(cfg, cache.Options{
		Scheme:            i.scheme,
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			objs[0]: {Label: routes},
			objs[1]: {Label: backends},
			objs[2]: {Label: backends},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("traffic informers in namespace %s: %w", namespace, err)
	}
	ctx, stop := context.WithCancel(i.ctx)
	out := &namespaceCache{config: cfg, cache: c, stop: stop}
	for _, obj := range objs {
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			stop()
			return nil, fmt.Errorf("traffic informers in namespace %s: %w", namespace, err)
		}
		if _, err := inf.AddEventHandler(i.handler(ctx)); err != nil {
			stop()
			return nil, fmt.Errorf("traffic informers in namespace %s: %w", namespace, err)
		}
		out.informers = append(out.informers, inf)
	}
	go func() { _ = c.Start(ctx) }()
	return out, nil
}
