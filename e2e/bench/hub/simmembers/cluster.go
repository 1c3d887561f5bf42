package simmembers

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// memberCluster is one simulated member: a real cluster.Cluster of its own (cache, HTTP client,
// rate limits) whose client, API reader, cache, field indexer and event recorders map names.
type memberCluster struct {
	cluster.Cluster
	m      member
	scope  scope
	client *mappingClient
	api    *reader
	cache  *mappingCache
}

var _ cluster.Cluster = &memberCluster{}

// newMemberCluster makes member name's cluster on the backing server of opts.
func newMemberCluster(name string, opts Options) (*memberCluster, error) {
	cfg := rest.CopyConfig(opts.Config)
	for _, apply := range opts.RESTOptions {
		if err := apply(cfg); err != nil {
			return nil, fmt.Errorf("simulated member %s: REST option: %w", name, err)
		}
	}
	// client-go shares one transport (one HTTP/2 connection) between configs with equal TLS
	// settings, which every member's are; members on their own API servers would each have
	// their own. A proxy function, even one that proxies nothing, makes the transport the
	// member's own.
	cfg.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
	m := newMember(name)
	clusterOpts := append(slices.Clone(opts.ClusterOptions), func(o *cluster.Options) {
		o.Cache = cacheOptions(m, opts.Namespaces, o.Cache)
	})
	cl, err := cluster.New(cfg, clusterOpts...)
	if err != nil {
		return nil, fmt.Errorf("simulated member %s: %w", name, err)
	}
	sc := newScope(cl.GetScheme(), cl.GetRESTMapper())
	mc := &memberCluster{Cluster: cl, m: m, scope: sc}
	mc.client = &mappingClient{reader: reader{m: m, scope: sc, r: cl.GetClient(), namespaces: opts.Namespaces, cached: true}, c: cl.GetClient()}
	mc.api = &reader{m: m, scope: sc, r: cl.GetAPIReader(), namespaces: opts.Namespaces}
	mc.cache = &mappingCache{Cache: cl.GetCache(), reader: &reader{m: m, scope: sc, r: cl.GetCache(), namespaces: opts.Namespaces, cached: true}}
	return mc, nil
}

// cacheOptions restricts a member's cache to its mapped namespaces and, for cluster-scoped
// kinds, to the objects labelled with its name; base's other settings are kept.
//
// With one namespace (the benchmark's) the cache is what a real member's is, one cluster-wide
// informer per kind, the namespace selected by a field selector; Namespaces, the one
// cluster-scoped kind the hub reads from a member's cache, are selected by MemberLabel. Other
// cluster-scoped kinds are not cached (a cached read finds none; the API reader does). With
// several namespaces it is controller-runtime's multi-namespace cache, whose every read looks
// up the kind's REST mapping first: a cost production's cluster-wide caches do not have.
func cacheOptions(m member, namespaces []string, base cache.Options) cache.Options {
	own := labels.SelectorFromSet(labels.Set{MemberLabel: m.name})
	if len(namespaces) == 1 {
		base.DefaultFieldSelector = fields.OneTermEqualSelector("metadata.namespace", m.out(namespaces[0]))
		base.ByObject = maps.Clone(base.ByObject)
		if base.ByObject == nil {
			base.ByObject = map[client.Object]cache.ByObject{}
		}
		base.ByObject[&corev1.Namespace{}] = cache.ByObject{Label: own, Field: fields.Everything()}
		return base
	}
	base.DefaultLabelSelector = own
	base.DefaultNamespaces = make(map[string]cache.Config, len(namespaces))
	for _, ns := range namespaces {
		// A namespace's own selector overrides the default one, which is for cluster-scoped
		// kinds: the member's namespaced objects carry no label.
		base.DefaultNamespaces[m.out(ns)] = cache.Config{LabelSelector: labels.Everything()}
	}
	return base
}

// GetClient returns the member's client: cached reads, writes to the backing server.
func (c *memberCluster) GetClient() client.Client { return c.client }

// GetAPIReader returns the member's uncached reader.
func (c *memberCluster) GetAPIReader() client.Reader { return c.api }

// GetCache returns the member's cache.
func (c *memberCluster) GetCache() cache.Cache { return c.cache }

// GetFieldIndexer returns the member's field indexer.
func (c *memberCluster) GetFieldIndexer() client.FieldIndexer {
	return fieldIndexer{fi: c.Cluster.GetFieldIndexer(), reader: c.cache.reader}
}

// GetEventRecorder returns a recorder of events about the member's objects.
func (c *memberCluster) GetEventRecorder(name string) events.EventRecorder {
	return &eventRecorder{c: c, r: c.Cluster.GetEventRecorder(name)}
}

// GetEventRecorderFor returns a recorder of events about the member's objects (the old API).
//
// Deprecated: as cluster.Cluster's; use GetEventRecorder.
func (c *memberCluster) GetEventRecorderFor(name string) record.EventRecorder {
	return &legacyRecorder{c: c, r: c.Cluster.GetEventRecorderFor(name)}
}

// outCopy is a copy of obj in the backing names, or obj itself when it is not an object.
func (c *memberCluster) outCopy(obj runtime.Object) runtime.Object {
	o, ok := obj.(client.Object)
	if !ok || o == nil {
		return obj
	}
	namespaced, err := c.scope.namespaced(o)
	if err != nil {
		return obj
	}
	cp, ok := o.DeepCopyObject().(client.Object)
	if !ok {
		return obj
	}
	c.m.outObject(cp, namespaced)
	return cp
}

// eventRecorder records events about a member's objects where they live on the backing server.
type eventRecorder struct {
	c *memberCluster
	r events.EventRecorder
}

// Eventf records an event about regarding (and related).
func (e *eventRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if related != nil {
		related = e.c.outCopy(related)
	}
	e.r.Eventf(e.c.outCopy(regarding), related, eventtype, reason, action, note, args...)
}

// legacyRecorder is eventRecorder for the old events API.
type legacyRecorder struct {
	c *memberCluster
	r record.EventRecorder
}

// Event records an event about object.
func (e *legacyRecorder) Event(object runtime.Object, eventtype, reason, message string) {
	e.r.Event(e.c.outCopy(object), eventtype, reason, message)
}

// Eventf records an event about object.
func (e *legacyRecorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	e.r.Eventf(e.c.outCopy(object), eventtype, reason, messageFmt, args...)
}

// AnnotatedEventf records an annotated event about object.
func (e *legacyRecorder) AnnotatedEventf(object runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	e.r.AnnotatedEventf(e.c.outCopy(object), annotations, eventtype, reason, messageFmt, args...)
}
