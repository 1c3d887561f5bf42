package traffic

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
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
// hub's HTTPRoutes, backend Services and EndpointSlices there, and, once asked for them
// (ImportsReader), on the ServiceImports' metadata: a resync reads them without calling the
// API server. The namespace of a Gateway where an earlier hub wrote routes (LegacyKey) is one
// more namespace. They are namespaced because the hub may hold only a Role in a traffic
// namespace. Until they have synced (or while the hub may not watch there, or the cluster has
// no ServiceImport kind) the caller reads uncached. Start them with the manager (they are a
// Runnable).
type Informers struct {
	configOf ConfigOf
	scheme   *runtime.Scheme
	hubName  string
	clock    clock.PassiveClock

	// changes carries the RayServices whose route or backends changed in a traffic cluster;
	// buffered, and a full buffer holds the informer that delivers.
	changes chan event.TypedGenericEvent[types.NamespacedName]

	mu sync.Mutex
	// ctx is the manager's, set by Start; informers made before then wait for it.
	ctx    context.Context
	caches map[informersKey]*namespaceCache
}

type informersKey struct{ cluster, namespace string }

// deniedRetry is how long informers the API server refused stay stopped, the namespace read
// uncached meanwhile as before they existed: rights are granted (or the ServiceImport kind
// installed) by an admin, rarely, and a refused informer would otherwise list again every few
// seconds, logging each refusal.
const deniedRetry = 10 * time.Minute

// namespaceCache is the informers of one traffic cluster and namespace.
type namespaceCache struct {
	namespace string
	config    *rest.Config
	cache     cache.Cache
	// informers are the routes' (first) and the backends'.
	informers []cache.Informer
	// imports is the ServiceImports' informer, nil until ImportsReader first started it.
	imports cache.Informer
	// denied is when the API server refused the routes' or backends' informers (the hub may
	// not list or watch them there), which stopped them; importsDenied is when it refused
	// the ServiceImports' (or had no such kind), which removed it. Zero otherwise; guarded by
	// Informers.mu.
	denied, importsDenied time.Time
	// ctx is the informers', ended by stop.
	ctx  context.Context
	stop context.CancelFunc
}

// NewInformers returns Informers reaching traffic clusters through configOf, decoding with
// scheme, and keeping what hub hubName made.
func NewInformers(configOf ConfigOf, scheme *runtime.Scheme, hubName string) *Informers {
	return &Informers{configOf: configOf, scheme: scheme, hubName: hubName, clock: clock.RealClock{}, caches: map[informersKey]*namespaceCache{},
		changes: make(chan event.TypedGenericEvent[types.NamespacedName], 1024)}
}

// Changes carries the RayServices whose route or backends changed in a traffic cluster: the
// gateway's verdict on a route (its status), a backend edited or deleted by someone else, the
// hub's own writes, a route an earlier hub wrote in a Gateway's namespace changing, and a
// ServiceImport of a route's namespace appearing or going. A RayService whose route is read
// through synced informers is then reconciled on these instead of being polled.
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
// informers that have synced; ok is false until then (the first call starts them), for
// deniedRetry after the API server refused them, and always on nil Informers. Reads of other
// objects through it fail.
func (i *Informers) Reader(ctx context.Context, cluster, namespace string) (r client.Reader, ok bool) {
	c := i.cacheFor(ctx, cluster, namespace)
	if c == nil || !c.synced() {
		return nil, false
	}
	return c.cache, true
}

// ImportsReader is Reader, and reads the names of the ServiceImports in namespace of cluster as
// well (ObserveImports): ok is false until the ServiceImports' informer has synced too (the
// first call starts it), and for deniedRetry after the cluster had no ServiceImport kind or
// refused the informer (a Role without watch on them). That informer is started only when
// asked for, so that a namespace without ServiceImport backends, or a cluster without the
// kind, costs nothing and keeps Reader's routes watched.
func (i *Informers) ImportsReader(ctx context.Context, cluster, namespace string) (r client.Reader, ok bool) {
	c := i.cacheFor(ctx, cluster, namespace)
	if c == nil {
		return nil, false
	}
	i.mu.Lock()
	if c.imports == nil && (c.importsDenied.IsZero() || i.clock.Since(c.importsDenied) >= deniedRetry) {
		var err error
		if c.imports, err = i.startImports(c); err != nil {
			c.importsDenied = i.clock.Now()
		}
	}
	imports := c.imports
	i.mu.Unlock()
	if imports == nil || !imports.HasSynced() || !c.synced() {
		return nil, false
	}
	return c.cache, true
}

// cacheFor returns the informers of namespace in cluster, started on the first call; nil
// when they cannot be (nil Informers, before Start, the cluster not reachable).
func (i *Informers) cacheFor(ctx context.Context, cluster, namespace string) *namespaceCache {
	if i == nil {
		return nil
	}
	cfg, err := i.configOf(ctx, cluster)
	if err != nil {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	key := informersKey{cluster: cluster, namespace: namespace}
	c := i.caches[key]
	if c != nil && c.config == cfg && !c.denied.IsZero() && i.clock.Since(c.denied) < deniedRetry {
		return nil
	}
	if c != nil && (c.config != cfg || !c.denied.IsZero()) {
		c.stop()
		delete(i.caches, key)
		c = nil
	}
	if c == nil {
		if i.ctx == nil {
			return nil
		}
		if c, err = i.start(cfg, namespace); err != nil {
			return nil
		}
		i.caches[key] = c
	}
	return c
}

// synced reports whether the routes' and backends' informers have synced.
func (c *namespaceCache) synced() bool {
	for _, inf := range c.informers {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
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
	out := &namespaceCache{namespace: namespace, config: cfg}
	c, err := cache.New(cfg, cache.Options{
		DefaultWatchErrorHandler: func(ctx context.Context, r *toolscache.Reflector, err error) {
			i.refused(out, err)
			toolscache.DefaultWatchErrorHandler(ctx, r, err)
		},
		Scheme:            i.scheme,
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		// A read of a kind without an informer here would start one and wait for it.
		ReaderFailOnMissingInformer: true,
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
	out.cache, out.ctx, out.stop = c, ctx, stop
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

// refused records in c that the API server refused one of its informers' lists or watches:
// Forbidden (and, for the ServiceImports, NotFound: the kind removed) stops the routes' and
// backends' informers, or removes the ServiceImports', for deniedRetry. Other errors are
// retried by the informer.
func (i *Informers) refused(c *namespaceCache, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return
	}
	imports := status.Status().Details.Group == serviceImportGroup
	if !apierrors.IsForbidden(err) && !(imports && apierrors.IsNotFound(err)) {
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if !imports {
		c.denied = i.clock.Now()
		c.stop()
		return
	}
	if c.imports != nil {
		_ = c.cache.RemoveInformer(c.ctx, importsObject())
		c.imports, c.importsDenied = nil, i.clock.Now()
	}
}

// importsObject is what the ServiceImports' informer keeps of each: its metadata, as
// ObserveImports lists it.
func importsObject() *metav1.PartialObjectMetadata {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(schema.GroupVersionKind{Group: serviceImportGroup, Version: serviceImportVersion, Kind: serviceImportKind})
	return obj
}

// startImports adds the ServiceImports' informer to c; it fails when the cluster has no
// ServiceImport kind. Called with i.mu held.
func (i *Informers) startImports(c *namespaceCache) (cache.Informer, error) {
	inf, err := c.cache.GetInformer(c.ctx, importsObject(), cache.BlockUntilSynced(false))
	if err != nil {
		return nil, fmt.Errorf("ServiceImport informer in namespace %s: %w", c.namespace, err)
	}
	if _, err := inf.AddEventHandler(i.importsHandler(c)); err != nil {
		_ = c.cache.RemoveInformer(c.ctx, importsObject())
		return nil, fmt.Errorf("ServiceImport informer in namespace %s: %w", c.namespace, err)
	}
	return inf, nil
}

// importsHandler queues, when a ServiceImport of c's namespace appears or goes, every
// RayService whose route the informers know there. ServiceImports carry no origin labels, and
// their names hash the member (ImportName), so an import names no RayService; they change
// rarely (a member's export made or withdrawn), and a settled RayService reconciled for
// nothing calls no API server. A RayService without a route yet is not settled: the route
// written, its own change queues it. Only names are read (ObserveImports): updates, and the
// initial list (read uncached and polled until then), queue nothing.
func (i *Informers) importsHandler(c *namespaceCache) toolscache.ResourceEventHandler {
	changed := func() {
		// Before the routes' informer synced, no RayService of the namespace is watched.
		if !c.informers[0].HasSynced() {
			return
		}
		var routes gwv1.HTTPRouteList
		if err := c.cache.List(c.ctx, &routes, client.InNamespace(c.namespace), client.UnsafeDisableDeepCopy); err != nil {
			return
		}
		for n := range routes.Items {
			i.notify(c.ctx, &routes.Items[n])
		}
	}
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			if !initial {
				changed()
			}
		},
		DeleteFunc: func(any) { changed() },
	}
}
