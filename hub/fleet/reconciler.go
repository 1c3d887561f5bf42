// Package fleet holds the hub's RayService reconciler: it places a hub RayService on member
// clusters (hub/placement), records the decision in its RayServiceBinding, keeps its revisions
// (hub/revision) and rolls them out cluster by cluster (hub/rollout), server-side applies the
// member copies (hub/propagation), reads them back and turns their status into the binding's
// and the hub RayService's (hub/aggregate). The decisions are those packages' pure functions;
// this package reads, executes and writes.
//
// A reconcile reads once (the group: the hub RayService, its binding and policy, every member's
// copy, the unreachable members listed), decides without API calls (placement, failover
// toleration included, from hub/placement with the snapshot of placement.Reservations the group
// read; per-cluster actions), executes the decision (recording the reservations it names
// first) with a thin executor that collects errors per cluster, and writes the binding's and
// the hub RayService's status once, from a defer, on every path.
//
// The controller runs in the hub's multicluster-runtime manager: hub objects come from the
// local cluster, and the watch on the member copies (on every engaged member) feeds the same
// queue, mapped to the hub RayService's key on the local cluster. Member clients come through
// the Members interface, which the membership code implements.
//
// It imports the hub's pure packages, hub/policy (for Check) and shared/, never hub/membership
// (Members is the seam), spoke/, shared/localfleet or, outside tests, shared/testing.
package fleet

// The reconciler: read → decide → execute → status, in reconcileNormal.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/rayfleet/rayfleet/hub/dataplane"
	"github.com/rayfleet/rayfleet/hub/membership"
	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/cachememo"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/serveaddress"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// DefaultResync is how often a RayService waiting on something no watch reports (see polled)
// is reconciled without any event.
const DefaultResync = 10 * time.Second

// DefaultSettledResync is how often any other RayService is reconciled without an event or a
// timer of its own (see polled), a safety net for a missed event: every watch that can change it
// is in place, so it can be rare. At a minute, 10,000 settled RayServices cost 167 reconciles a
// second and 40 % of a core doing nothing, and slowed the status path beside them; at ten
// minutes, 17 a second. Each is spread by up to a tenth more, so that RayServices placed
// together do not resync together.
const DefaultSettledResync = 10 * time.Minute

// defaultConcurrentReconciles lets slow members (each call may wait on a remote API server)
// not hold up the RayServices placed elsewhere.
const defaultConcurrentReconciles = 8

// Members hands out clients of member clusters by MemberCluster name.
type Members interface {
	// Client returns a client of the member named name, or an error when the member is not
	// engaged or cannot be reached.
	Client(ctx context.Context, name string) (client.Client, error)
	// Reader returns an uncached reader of the member named name (the traffic cluster's
	// route, which the hub may read in one namespace only).
	Reader(ctx context.Context, name string) (client.Reader, error)
}

// Options tune the Reconciler.
type Options struct {
	// Resync is the periodic requeue of a RayService waiting on something no watch reports;
	// 0 means DefaultResync.
	Resync time.Duration
	// SettledResync is the periodic requeue of the others; 0 means DefaultSettledResync, and
	// it is never shorter than Resync.
	SettledResync time.Duration
	// MaxConcurrentReconciles bounds parallel reconciles; 0 means 8.
	MaxConcurrentReconciles int
	// Clock is the time source; nil means the real clock.
	Clock clock.Clock
	// HubName is this hub's name in the origin-hub label of its copies; "" means
	// labels.DefaultHubName. Copies naming another hub are not this hub's.
	HubName string
	// MetricsRegisterer is where the metrics are registered; nil means controller-runtime's
	// registry.
	MetricsRegisterer prometheus.Registerer
	// Specs is what the hub cache's RayService transform (Specs.Transform) keeps of the specs
	// it drops; nil when the cache keeps them.
	Specs *HubSpecs
	// TrafficCluster is the traffic cluster's own ranges and domain: no member's serve address
	// in them is routed to.
	TrafficCluster serveaddress.Cluster
	// Probes probes the serve addresses the routes send traffic to, from the hub; nil leaves
	// each backend's health to the control plane's view (MemberCluster Ready, the copy read).
	Probes *dataplane.Prober
	// TrafficInformers read the routes and their backends, the ServiceImports and the routes
	// earlier hubs wrote in Gateways' namespaces without calling the traffic clusters' API
	// servers; nil reads them uncached.
	TrafficInformers *traffic.Informers
}

// Reconciler reconciles hub RayServices. Build it with NewReconciler.
type Reconciler struct {
	client client.Client
	// apiReader reads the hub uncached: the route in a traffic namespace of the hub.
	apiReader client.Reader
	// informers are the hub cache's, whose MemberClusters each reconcile reads in place
	// (readMemberClusters); nil in tests on a fake client, which then list.
	informers cache.Informers
	members   Members
	recorder  events.EventRecorder
	clock     clock.Clock
	metrics   *metrics
	memory
	// started is when the reconciler first reconciled, for engageGrace.
	started *membership.Start
	opts    Options
}

// memory is what the reconciler remembers between reconciles, apart from what it reads: each
// part saves work or bridges a cache that lags the hub's own writes. Forget drops what it holds
// of a RayService that is gone.
type memory struct {
	// specs holds the hub RayServices' specs the cache does not keep (Options.Specs); nil when
	// the cache keeps them.
	specs *HubSpecs
	// reserved remembers recent placements until the members' reports include them.
	reserved *placement.Reservations
	// validSpecs remembers the specs that passed validation: validating parses serveConfigV2,
	// which costs up to a few hundred milliseconds for the largest accepted one, and a resync
	// must not pay that for a spec that did not change.
	validSpecs *validation.SpecMemo
	// covered remembers which desired spec each copy contains, the drift check's answer while
	// the copy's generation holds (its spec is not cached).
	covered *propagation.Covered
	// deletes remembers the copies deleted recently (see deleteCopy).
	deletes deletes
	// memberViews are the MemberClusters as the planner sees them.
	memberViews *memberViews
	// bindingStatuses remembers each binding status written until the cache shows it: the
	// binding holds the rollout's state, and a reconcile reading it stale would decide from
	// an older step (a blue/green step's time taken again, a phase restarted). It runs on the
	// wall clock: CacheLag bounds how far the informer trails the hub's writes, which the
	// rollout's clock (stepped a whole interval at a time in tests) cannot tell.
	bindingStatuses *cachememo.Statuses[fleetv1alpha1.RayServiceBindingStatus]
	// ownWrites remembers the copies as the hub last wrote them, so that their watch events
	// coming back queue no reconcile.
	ownWrites *ownWrites
	// legacyGone remembers the routes earlier hubs wrote in Gateway namespaces that are gone.
	legacyGone legacyRoutes
	// holders knows which members' caches hold a RayService under each key; nil knows
	// nothing, and every member is read.
	holders *holders
}

// Forget drops what is remembered of the RayService key, which is gone.
func (m *memory) Forget(key types.NamespacedName) {
	m.specs.forget(key)
	m.reserved.Forget(key)
	m.validSpecs.Forget(key)
	m.bindingStatuses.Forget(key)
	m.legacyGone.forget(key)
}

// NewReconciler returns a reconciler using the hub manager's client and event recorder and
// reaching members through members.
func NewReconciler(mgr ctrl.Manager, members Members, opts Options) *Reconciler {
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	if opts.SettledResync <= 0 {
		opts.SettledResync = DefaultSettledResync
	}
	opts.SettledResync = max(opts.SettledResync, opts.Resync)
	if opts.MaxConcurrentReconciles <= 0 {
		opts.MaxConcurrentReconciles = defaultConcurrentReconciles
	}
	if opts.HubName == "" {
		opts.HubName = labels.DefaultHubName
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.MetricsRegisterer == nil {
		opts.MetricsRegisterer = ctrlmetrics.Registry
	}
	return &Reconciler{
		client:    mgr.GetClient(),
		apiReader: mgr.GetAPIReader(),
		informers: mgr.GetCache(),
		members:   members,
		recorder:  mgr.GetEventRecorder("rayfleet-hub"),
		clock:     opts.Clock,
		memory: memory{
			specs:           opts.Specs,
			reserved:        placement.NewReservations(),
			validSpecs:      validation.NewSpecMemo(),
			covered:         propagation.NewCovered(),
			memberViews:     &memberViews{},
			bindingStatuses: cachememo.NewStatuses(clock.RealClock{}, (*fleetv1alpha1.RayServiceBindingStatus).DeepCopy),
			ownWrites:       newOwnWrites(),
			holders:         newHolders(),
		},
		started: &membership.Start{},
		opts:    opts,
	}
}

// OriginOf returns the hub RayService a member RayService was propagated from, by its origin
// labels; false for a copy without them (not the hub's).
func OriginOf(member client.Object) (types.NamespacedName, bool) {
	l := member.GetLabels()
	key := types.NamespacedName{Namespace: l[labels.OriginNamespace], Name: l[labels.OriginName]}
	return key, key.Namespace != "" && key.Name != ""
}

// Reconcile places, propagates and aggregates one hub RayService. Requests carry the local
// cluster's (empty) name; a request naming a member cluster would make a member copy a hub
// object, and is dropped.
func (r *Reconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	if req.ClusterName != "" {
		ctrl.LoggerFrom(ctx).Error(nil, "Dropping a request for a member cluster's object", "cluster", req.ClusterName)
		return ctrl.Result{}, nil
	}
	var hub rayv1.RayService
	err := r.client.Get(ctx, req.NamespacedName, &hub)
	if err == nil {
		err = r.readSpec(ctx, &hub)
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.memory.Forget(req.NamespacedName)
			r.metrics.forget(req.NamespacedName)
			r.wantProbes(req.NamespacedName, nil)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get RayService %s: %w", req.NamespacedName, err)
	}
	if !hub.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, &hub)
	}
	if !controllerutil.ContainsFinalizer(&hub, labels.MemberCleanupFinalizer) {
		if err := addFinalizer(ctx, r.client, &hub, labels.MemberCleanupFinalizer); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer to RayService %s: %w", req.NamespacedName, err)
		}
	}
	return r.reconcileNormal(ctx, &hub)
}

// readSpec gives hub, read from the cache, its spec when the cache keeps none (Options.Specs):
// the one remembered for its generation or, when the informer is storing a newer generation at
// that instant, the whole RayService read again from the API server.
func (r *Reconciler) readSpec(ctx context.Context, hub *rayv1.RayService) error {
	if r.specs == nil {
		return nil
	}
	if ok, err := r.specs.fill(hub); ok || err != nil {
		return err
	}
	key := client.ObjectKeyFromObject(hub)
	ctrl.LoggerFrom(ctx).V(1).Info("Reading the RayService from the API server: its spec is not remembered for generation", "generation", hub.Generation)
	*hub = rayv1.RayService{}
	if err := r.apiReader.Get(ctx, key, hub); err != nil {
		return fmt.Errorf("get RayService %s from the API server: %w", key, err)
	}
	return nil
}

// reconcileNormal is read → decide → execute, with the status written from a defer so that
// an error in the executor still leaves the status saying what was read and decided.
func (r *Reconciler) reconcileNormal(ctx context.Context, hub *rayv1.RayService) (result ctrl.Result, err error) {
	g, err := r.read(ctx, hub)
	if err != nil {
		return ctrl.Result{}, err
	}
	if waiting := r.engaging(g); len(waiting) > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the hub to engage members it has just started with", "members", waiting)
		return ctrl.Result{RequeueAfter: engageRetry}, nil
	}
	r.readSpecs(ctx, g)
	d := r.decide(g)
	if d.traffic != nil {
		r.wantProbes(g.key, d.traffic.probeTargets)
	} else {
		r.wantProbes(g.key, nil)
	}
	o := &outcome{g: g, d: d}
	defer func() {
		if held(o.res, err) {
			// The binding read is older than the API server's: a status from it would be too.
			// The next reconcile, on a cache that caught up, writes it.
			return
		}
		if statusErr := r.writeStatus(ctx, o); statusErr != nil {
			err = errors.Join(err, statusErr)
		}
		if err != nil {
			result = ctrl.Result{}
		}
	}()
	o.res, err = r.act(ctx, g, d)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.requeueAfter(g, o)}, nil
}

// act carries d out and then announces it, unless the executor held it (made from a binding
// older than the API server's, or onto a member filled meanwhile): a held decision says
// nothing, and the next reconcile decides again and tells what it did.
func (r *Reconciler) act(ctx context.Context, g *group, d *decision) (*results, error) {
	res, err := r.execute(ctx, g, d)
	if !held(res, err) {
		r.announce(g, d)
	}
	return res, err
}

// held reports whether the executor held the decision: it was made from a binding older than
// the API server's (a conflict on the binding's spec, or the binding found newer before a copy
// was written), or a member it newly chose was filled by placements recorded since its group
// was read, so nothing of it was carried out.
func held(res *results, err error) bool {
	return apierrors.IsConflict(err) || (res != nil && (res.staleBinding || len(res.misfit) > 0))
}

// engageGrace is how long after the hub starts (or a standby replica starts to lead) a member it has not engaged yet is taken for
// one still being engaged, not for an unreachable one (membership.EngageGrace, which keeps
// such a member's MemberCluster status meanwhile): until then its copies cannot be read.
// Deciding meanwhile would take a member that holds a copy for one that is down: a rollout
// awaiting an approval went back to Progressing and re-applied the old revision on a member
// that had the new one (deleting its RayCluster), and a blue/green shifting traffic sent all
// of it to green for a moment (chaos scenario 3, the hub killed and restarted).
const engageGrace = membership.EngageGrace

// staleRetry is how soon a RayService whose decision was held, its binding in the cache older
// than the API server's, is tried again.
const staleRetry = time.Second

// misfitRetry is how soon a RayService whose decision was held on a member filled meanwhile is
// planned again: its next read sees the reservations that filled it, so it can go at once.
const misfitRetry = time.Millisecond

// engageRetry is how soon a RayService waiting for engagement is tried again.
const engageRetry = time.Second

// engaging names the members of g that hold or are placed with a copy and that the hub has not
// engaged yet, while within engageGrace of its start; nil otherwise, and then a member not
// engaged counts as unreachable.
func (r *Reconciler) engaging(g *group) []string {
	if r.started.Since(r.clock) >= engageGrace {
		return nil
	}
	var out []string
	for _, name := range g.holding() {
		if m := g.members[name]; m != nil && m.mc != nil && errors.Is(m.readErr, multicluster.ErrClusterNotFound) {
			out = append(out, name)
		}
	}
	return out
}

// requeueAfter is the periodic resync (long unless something unwatched is in motion), or
// sooner when a timer runs out: a tolerated member's time (the RayService fails over then, not
// up to a resync later), a soak or a rollout deadline.
func (r *Reconciler) requeueAfter(g *group, o *outcome) time.Duration {
	if o.res != nil && o.res.newRefusal {
		// The member that refused is left out by the next plan; make it now, not a resync later.
		return time.Millisecond
	}
	if o.res != nil && o.res.staleBinding {
		return staleRetry
	}
	if o.res != nil && len(o.res.misfit) > 0 {
		return misfitRetry
	}
	after := r.opts.Resync
	if !polled(g, o) {
		after = wait.Jitter(r.opts.SettledResync, 0.1)
	}
	if !o.d.wake.IsZero() {
		after = min(after, max(o.d.wake.Sub(g.now), time.Millisecond))
	}
	if o.d.traffic != nil && len(o.d.traffic.pending) > 0 {
		after = min(after, pendingRetry)
	}
	if o.d.rollout != nil && o.d.rollout.plan.RequeueAfter > 0 {
		// A soak ending or a deadline passing changes the rollout without any event.
		after = min(after, o.d.rollout.plan.RequeueAfter)
	}
	return after
}

// polled reports whether this RayService waits on something no watch reports, so that it is
// reconciled every Resync: a reconcile that stopped early or failed to write a member, an
// invalid or under-placed RayService, a member or a copy's spec not read, a cluster leaving, a foreign
// RayService in a copy's place (its deletion maps to no hub RayService), a blue/green in
// flight, or traffic read without the traffic informers (the route's acceptance, the
// ServiceImports or the route an earlier hub wrote in the Gateway's namespace read, not
// watched). Everything else a RayService waits on arrives by watch (its spec and annotations,
// its binding's approval, its policy, the MemberClusters, every member copy, its route and
// backends, ServiceImports and earlier route in the traffic informers) or is a timer
// (requeueAfter): a rollout paused, awaiting an approval, stalled or rolling back included,
// whatever its phase. It is reconciled otherwise only every SettledResync, a safety net.
func polled(g *group, o *outcome) bool {
	d := o.d
	if o.res == nil || d.invalid != nil || d.placedCond.Status != metav1.ConditionTrue ||
		len(d.leaving) > 0 || len(d.foreign) > 0 || len(o.kept()) > 0 || d.colors != nil || (d.traffic != nil && !g.route.watched) ||
		len(o.res.applyErrs) > 0 || o.res.trafficErr != nil {
		return true
	}
	if d.rollout == nil || d.rollout.plan == nil {
		return true
	}
	for _, m := range g.members {
		if m.readErr != nil || m.specErr != nil {
			return true
		}
	}
	return false
}

// validate runs the spoke's own validation: a RayService the spokes would reject is never
// placed. A spec that passed is remembered (validation.SpecMemo).
func (r *Reconciler) validate(rs *rayv1.RayService) error {
	// Metadata (annotations) changes without a new generation; it is cheap to check.
	if err := validation.RayServiceMetadata(rs.ObjectMeta); err != nil {
		return fmt.Errorf("validate RayService %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	if err := r.validSpecs.Check(rs); err != nil {
		return fmt.Errorf("validate RayService %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	return nil
}
