package fleet

// Phase: read. The group: everything one reconcile reads before it decides.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/hub/dataplane"
	"github.com/rayfleet/rayfleet/hub/grants"
	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/hub/revision"
	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/cacheread"
	"github.com/rayfleet/rayfleet/shared/podsecurity"
)

// group is everything one reconcile reads, read once before anything is decided: the hub
// RayService, its binding and policy, the MemberClusters, and every member's copy (or why it
// could not be read). The decision and the status are computed from it; nothing reads the API
// again until the executor writes.
type group struct {
	hub *rayv1.RayService
	key types.NamespacedName
	now time.Time
	// binding is nil before the first reconcile creates it.
	binding *fleetv1alpha1.RayServiceBinding
	policy  policyRead
	// memberClusters are the fleet's MemberClusters by name.
	memberClusters map[string]*fleetv1alpha1.MemberCluster
	// members holds a record for every MemberCluster and every cluster the binding names.
	members map[string]*memberRecord
	// hash is the hub spec's hash (before overrides), what a refusal is recorded against.
	hash string
	// refusals are the binding's refusals that still hold for hash.
	refusals map[string]fleetv1alpha1.ClusterRefusal
	// podSecurity is the Pod Security level the hub spec's Pods need, and what they break at
	// the stricter levels; placement keeps new copies off members enforcing one of those.
	podSecurity podsecurity.Need
	// history are the hub RayService's ControllerRevisions, oldest first.
	history revision.History
	// route is the RayService's HTTPRoute in the traffic cluster, when the policy manages
	// traffic.
	route routeRead
	// grants are what the hub's admin granted the RayService's namespace.
	grants grants.Set
	// probes are the hub's probes of the members' serve addresses, by address (readProbes);
	// nil when probing is off. probeFresh is how long a verdict counts.
	probes     map[string]dataplane.Health
	probeFresh time.Duration
	// reserved are the recent placements as they stood when the group was read, under the
	// RayService's key and its green key; the plan reads them, the executor records its intents.
	reserved placement.Snapshot
}

// memberRecord is one member as the reconcile read it.
type memberRecord struct {
	name string
	// mc is nil for a cluster the binding names that has left the fleet.
	mc     *fleetv1alpha1.MemberCluster
	client client.Client
	// copy is the member's RayService of the hub RayService's name, nil when it has none.
	// Read from the member's cache it has no spec (propagation.TrimCopy); readSpecs replaces
	// it by the whole copy, or sets covered.
	copy *rayv1.RayService
	// covered is the SpecHash of the desired spec the copy was last seen to contain at its
	// generation (propagation.Covered); empty when copy carries its spec, or has none.
	covered string
	// specErr is why the whole copy could not be read (readSpecs): the copy stays as cached,
	// and its drift is checked at the next reconcile.
	specErr error
	// readErr is why the copy could not be read (member not engaged, API error): the member
	// counts as unreachable and nothing is decided from its absent copy.
	readErr error
}

// policyRead is the PlacementPolicy that places the RayService, as found.
type policyRead struct {
	// name is the policy's name, empty for the built-in one.
	name    string
	builtIn bool
	// pp is the policy; nil when builtIn or not found.
	pp *fleetv1alpha1.PlacementPolicy
}

// placedBefore are the clusters the binding had chosen before this reconcile.
func (g *group) placedBefore() []string {
	if g.binding == nil {
		return nil
	}
	return slices.Clone(g.binding.Spec.Clusters)
}

// holding are the clusters the binding says may hold a copy: chosen, or still listed in its
// status.
func (g *group) holding() []string {
	if g.binding == nil {
		return nil
	}
	names := slices.Clone(g.binding.Spec.Clusters)
	for i := range g.binding.Status.Clusters {
		names = append(names, g.binding.Status.Clusters[i].Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// read builds the group of hub. Errors reading the hub cluster (binding, MemberClusters,
// policies) end the reconcile; a member that cannot be read is recorded in its memberRecord.
func (r *Reconciler) read(ctx context.Context, hub *rayv1.RayService) (*group, error) {
	g := &group{
		hub:            hub,
		key:            types.NamespacedName{Namespace: hub.Namespace, Name: hub.Name},
		now:            r.clock.Now(),
		memberClusters: map[string]*fleetv1alpha1.MemberCluster{},
		members:        map[string]*memberRecord{},
	}
	var err error
	if g.binding, err = r.readBinding(ctx, g.key); err != nil {
		return nil, err
	}
	if err = r.readMemberClusters(ctx, g); err != nil {
		return nil, err
	}
	r.readReserved(g)
	policy, err := r.readPolicy(ctx, hub)
	if err != nil {
		return nil, err
	}
	g.policy = policy
	if g.grants, err = r.readGrants(ctx, hub.Namespace); err != nil {
		return nil, err
	}
	if g.hash, err = propagation.SpecHash(&hub.Spec); err != nil {
		return nil, fmt.Errorf("RayService %s: %w", g.key, err)
	}
	g.refusals = refusalsOf(g.binding, g.hash, g.now)
	g.podSecurity = podsecurity.NeedOf(hub)
	if g.history, err = revision.ListIndexed(ctx, r.client, hub); err != nil {
		return nil, err
	}

	if spec := trafficSpec(g); spec != nil {
		g.route = r.readRoute(ctx, g, spec)
	}
	holding := g.holding()
	names := slices.Concat(slices.Collect(maps.Keys(g.memberClusters)), holding)
	slices.Sort(names)
	// Most members hold no copy: one RayService (2 KB before anything is read into it)
	// serves their reads, and a new one is made only once a copy is found in it.
	probe := &rayv1.RayService{}
	names = slices.Compact(names)
	may := r.holders.may(g.key, names)
	for i, name := range names {
		// The members the binding names are read whatever the index says: the copy's own
		// watch event may queue this reconcile before the index has seen it.
		read := may[i] || slices.Contains(holding, name)
		g.members[name] = r.readMember(ctx, g, name, probe, read)
		if g.members[name].copy == probe {
			probe = &rayv1.RayService{}
		}
	}
	r.readProbes(g)
	return g, nil
}

// readReserved takes g's snapshot of the reservations, after the MemberClusters were read: a
// report they show ends the reservations it includes.
func (r *Reconciler) readReserved(g *group) {
	g.reserved = r.reserved.Snapshot(g.now, membersOf(g.memberClusters, r.memberViews), g.key, placement.GreenKey(g.key))
}

// readBinding reads the RayService's binding, nil when there is none. Its status is the one
// this hub wrote last while the cache does not show that write yet (bindingStatuses).
func (r *Reconciler) readBinding(ctx context.Context, key types.NamespacedName) (*fleetv1alpha1.RayServiceBinding, error) {
	var binding fleetv1alpha1.RayServiceBinding
	if err := r.client.Get(ctx, key, &binding); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get RayServiceBinding %s: %w", key, err)
	}
	r.bindingStatuses.Apply(&binding, &binding.Status)
	return &binding, nil
}

// readPolicy finds the PlacementPolicy the RayService names (or its namespace's default).
func (r *Reconciler) readPolicy(ctx context.Context, hub *rayv1.RayService) (policyRead, error) {
	var pps fleetv1alpha1.PlacementPolicyList
	if err := r.client.List(ctx, &pps, client.InNamespace(hub.Namespace)); err != nil {
		return policyRead{}, fmt.Errorf("list PlacementPolicies in %s: %w", hub.Namespace, err)
	}
	names := make([]string, 0, len(pps.Items))
	for i := range pps.Items {
		names = append(names, pps.Items[i].Name)
	}
	name, builtIn := placement.PolicyName(hub.Annotations, names)
	out := policyRead{name: name, builtIn: builtIn}
	if i := slices.Index(names, name); !builtIn && i >= 0 {
		out.pp = &pps.Items[i]
	}
	return out, nil
}

// readMember reads one member's copy through its (cached) client into into, an empty
// RayService that becomes the record's copy when there is one; unless read is false, when the
// member's cache is known to hold none (holders).
func (r *Reconciler) readMember(ctx context.Context, g *group, name string, into *rayv1.RayService, read bool) *memberRecord {
	m := &memberRecord{name: name, mc: g.memberClusters[name]}
	if m.mc == nil {
		m.readErr = errors.New("the member has left the fleet")
		return m
	}
	cl, err := r.members.Client(ctx, name)
	if err != nil {
		m.readErr = fmt.Errorf("cluster %s: %w", name, err)
		return m
	}
	m.client = cl
	if !read {
		return m
	}
	err = cl.Get(ctx, g.key, into)
	switch {
	case err == nil:
		m.copy = into
		return m
	case !apierrors.IsNotFound(err):
		m.readErr = fmt.Errorf("get RayService %s on cluster %s: %w", g.key, name, err)
	}
	// Emptied for the next member, whatever a failed read left in it.
	*into = rayv1.RayService{}
	return m
}

// readSpecs gives the drift check what it needs of every copy the hub made: the hash of the
// desired spec the copy was last seen to contain, when the copy is still at the generation it
// was seen at, or else the whole copy, read from its member's API server (the caches keep no
// specs). That read happens once per copy and generation: after a hub restart, or when
// someone else changed the copy's spec. A copy that is gone by then is read as none; a read
// that fails leaves the copy as cached, its status still counted, and nothing applied to it
// (specErr) until a reconcile reads it. Only the clusters the binding places the RayService on
// are read: a copy on a cluster it left is never compared (one retained there would be read at
// every resync), and one on a cluster chosen by this reconcile is applied, its spec unknown.
func (r *Reconciler) readSpecs(ctx context.Context, g *group) {
	placed := g.placedBefore()
	for name, m := range g.members {
		if m.copy == nil || m.readErr != nil || !slices.Contains(placed, name) ||
			propagation.OwnershipOf(r.opts.HubName, g.hub, m.copy) == propagation.Foreign {
			continue
		}
		if digest, ok := r.covered.Digest(name, m.copy); ok {
			m.covered = digest
			continue
		}
		reader, err := r.members.Reader(ctx, name)
		if err != nil {
			m.specErr = fmt.Errorf("cluster %s: %w", name, err)
			continue
		}
		var whole rayv1.RayService
		switch err := reader.Get(ctx, g.key, &whole); {
		case apierrors.IsNotFound(err):
			m.copy = nil
		case err != nil:
			m.specErr = fmt.Errorf("get RayService %s on cluster %s from its API server: %w", g.key, name, err)
		default:
			m.copy = &whole
		}
		if m.specErr != nil {
			ctrl.LoggerFrom(ctx).Error(m.specErr, "Reading a copy's spec failed; its drift is checked next time", "cluster", name)
		}
	}
}

// routeRead is the RayService's HTTPRoute as this reconcile read it.
type routeRead struct {
	// err is why the route could not be read (the traffic cluster unreachable, no rights).
	err   error
	state traffic.State
	// live is the route and its backends as they are, for the executor to write only what
	// differs; nil when not read.
	live *traffic.Live
	// legacy is the route an earlier hub wrote in the Gateway's namespace, read only while
	// the route in the RayService's namespace does not exist (the move not begun).
	legacy traffic.State
	// imports are the ServiceImports of the route's namespace, for ServiceImport backends;
	// nil when not read or not readable.
	imports traffic.Imports
	// watched is set when everything was read from the traffic informers, whose changes
	// queue the RayService (Informers.Changes): the route and backends, the route an earlier
	// hub wrote in the Gateway's namespace until it is gone, the ServiceImports. Nothing read
	// here, or by the executor's RetireLegacy, needs polling.
	watched bool
}

// acceptedWeights reports whether the gateway accepted a route giving the clusters want.
func (rr routeRead) acceptedWeights(want map[string]int32) bool {
	if rr.err != nil || !rr.state.Accepted {
		return false
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if rr.state.Weights[name] != want[name] {
			return false
		}
	}
	for name, w := range rr.state.Weights {
		if w != 0 && want[name] == 0 {
			return false
		}
	}
	return true
}

// readRoute reads the RayService's route and backends in the traffic cluster, the route an
// earlier hub wrote in the Gateway's namespace and the ServiceImports: each from the traffic
// informers once they have synced, else uncached.
func (r *Reconciler) readRoute(ctx context.Context, g *group, spec *fleetv1alpha1.TrafficSpec) routeRead {
	reader, _, err := r.trafficClients(ctx, spec)
	if err != nil {
		return routeRead{err: err}
	}
	key := traffic.Key(g.key)
	cached, ok := r.opts.TrafficInformers.Reader(ctx, spec.Cluster, key.Route.Namespace)
	if !ok {
		cached = reader
	}
	state, live, err := traffic.Read(ctx, cached, key, r.opts.HubName, g.holding())
	rr := routeRead{state: state, live: live, err: err, watched: ok}
	if legacy, ok := traffic.LegacyKey(g.key, spec); ok && err == nil && (!state.Exists || !r.legacyGone.has(spec.Cluster, legacy)) {
		// The executor reads it too (RetireLegacy) until it is gone.
		legacyReader, watched := r.legacyReader(ctx, spec.Cluster, legacy, reader)
		rr.watched = rr.watched && watched
		if !state.Exists {
			rr.legacy, rr.err = traffic.ObserveLegacy(ctx, legacyReader, legacy, r.opts.HubName, g.holding())
		}
	}
	if rr.err == nil && spec.BackendKind == fleetv1alpha1.BackendServiceImport {
		imports, ok := r.opts.TrafficInformers.ImportsReader(ctx, spec.Cluster, key.Route.Namespace)
		if !ok {
			imports, rr.watched = reader, false
		}
		names, ierr := traffic.ObserveImports(ctx, imports, key.Route.Namespace)
		if ierr != nil {
			// The legacy export names carry the traffic meanwhile.
			ctrl.LoggerFrom(ctx).V(1).Info("Could not list ServiceImports; routing to the legacy export names",
				"cluster", spec.Cluster, "reason", ierr.Error())
		}
		rr.imports = names
	}
	return rr
}

// legacyReader reads the route an earlier hub wrote in the Gateway's namespace (legacy): the
// traffic informers of that namespace once synced (watched), else uncached, as when the hub
// may not watch there.
func (r *Reconciler) legacyReader(ctx context.Context, cluster string, legacy traffic.RouteKey, uncached client.Reader) (_ client.Reader, watched bool) {
	if cached, ok := r.opts.TrafficInformers.Reader(ctx, cluster, legacy.Route.Namespace); ok {
		return cached, true
	}
	return uncached, false
}

// trafficClients are the clients of the traffic cluster: the hub's own (uncached reads), or
// the member's.
func (r *Reconciler) trafficClients(ctx context.Context, spec *fleetv1alpha1.TrafficSpec) (client.Reader, client.Client, error) {
	if spec.Cluster == "" {
		return r.apiReader, r.client, nil
	}
	reader, err := r.members.Reader(ctx, spec.Cluster)
	if err != nil {
		return nil, nil, fmt.Errorf("traffic cluster %s: %w", spec.Cluster, err)
	}
	w, err := r.members.Client(ctx, spec.Cluster)
	if err != nil {
		return nil, nil, fmt.Errorf("traffic cluster %s: %w", spec.Cluster, err)
	}
	return reader, w, nil
}

// readMemberClusters reads the MemberClusters into g, read only: the planner and the records
// copy what they keep (memberOf). They are the cache's own objects where its informer's store
// can be read (cacheread), copies from a List otherwise.
func (r *Reconciler) readMemberClusters(ctx context.Context, g *group) error {
	mcs, ok, err := cacheread.Objects[fleetv1alpha1.MemberCluster](ctx, r.informers)
	if err != nil {
		return fmt.Errorf("list MemberClusters: %w", err)
	}
	if !ok {
		var list fleetv1alpha1.MemberClusterList
		if err = r.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("list MemberClusters: %w", err)
		}
		for i := range list.Items {
			mcs = append(mcs, &list.Items[i])
		}
	}
	for _, mc := range mcs {
		g.memberClusters[mc.Name] = mc
	}
	return nil
}

// readGrants reads what the NamespaceGrants grant the RayService's namespace, matched against
// the namespace's labels. A namespace that is gone has no labels.
func (r *Reconciler) readGrants(ctx context.Context, namespace string) (grants.Set, error) {
	var list fleetv1alpha1.NamespaceGrantList
	if err := r.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return grants.Set{}, fmt.Errorf("list NamespaceGrants: %w", err)
	}
	var ns corev1.Namespace
	if err := r.client.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil && !apierrors.IsNotFound(err) {
		return grants.Set{}, fmt.Errorf("get namespace %s: %w", namespace, err)
	}
	return grants.For(list.Items, namespace, ns.Labels), nil
}

// refusalsOf returns the binding's refusals that still hold: for the spec hash the hub
// propagates now and not yet due for a retry. A new spec, or a retry time reached, drops the
// refusal, so the member is tried again.
func refusalsOf(b *fleetv1alpha1.RayServiceBinding, hash string, now time.Time) map[string]fleetv1alpha1.ClusterRefusal {
	out := map[string]fleetv1alpha1.ClusterRefusal{}
	if b == nil {
		return out
	}
	for _, r := range b.Status.Refusals {
		if r.SpecHash == hash && now.Before(r.RetryTime.Time) {
			out[r.Cluster] = r
		}
	}
	return out
}

// readProbes records in g the probes' state of every member's serve address.
func (r *Reconciler) readProbes(g *group) {
	if r.opts.Probes == nil || exportsServe(g) {
		return
	}
	var addrs []string
	for name := range g.members {
		if a := backendAddress(g, name); a != "" {
			addrs = append(addrs, a)
		}
	}
	g.probes = r.opts.Probes.Health(addrs)
	g.probeFresh = r.opts.Probes.Fresh()
}
