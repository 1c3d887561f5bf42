// Package sweep is the hub's orphan sweep: a garbage collector of member copies that nothing on
// the hub accounts for any more, in the manner of Kueue's MultiKueue garbage collector. A copy
// is left behind when its member could not be reached while its hub RayService was deleted or
// moved away, or by a hub that lost its records; the sweep deletes it once its member is Ready
// again. Which copy is an orphan is the pure Judge; the controller reads (from the caches,
// confirmed by uncached hub reads before anything is deleted) and deletes.
//
// The controller runs in the hub's multicluster-runtime manager and is keyed by member: a
// request names a MemberCluster on the local cluster. It imports shared/ only, never another
// hub package: hub/fleet's deletion leaves copies to it through the labels and the binding.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// The sweep reads hub RayServices, bindings and MemberClusters (cached and uncached) and
// records events; on members it lists, watches and deletes RayServices under the hub's member
// identity (shared/hubaccess).
//
// +kubebuilder:rbac:groups=ray.io,resources=rayservices,verbs=get;list;watch
// +kubebuilder:rbac:groups=fleet.rayfleet.io,resources=rayservicebindings;memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=core;events.k8s.io,resources=events,verbs=create;patch

// DefaultInterval is how often every Ready member is swept without an event: events are
// missed across restarts and leader changes, and a periodic pass catches what they missed.
const DefaultInterval = 2 * time.Minute

// ReasonOrphanSwept is the reason of the MemberCluster event recording a deleted orphan.
const ReasonOrphanSwept = "OrphanSwept"

// minPassGap is the least time between two passes on one member (see pace); a shorter
// Options.Interval shortens it too.
const minPassGap = 10 * time.Second

// Options tune the sweep.
type Options struct {
	// HubName is this hub's name; only copies whose origin-hub label says it are swept. ""
	// means labels.DefaultHubName.
	HubName string
	// Interval is the periodic sweep of each member; 0 means DefaultInterval.
	Interval time.Duration
	// MetricsRegisterer is where rayfleet_orphans_swept_total is registered; nil means
	// controller-runtime's registry.
	MetricsRegisterer prometheus.Registerer
}

// ClusterGetter returns a member cluster (its cache and client) by MemberCluster name.
type ClusterGetter interface {
	// GetCluster returns the engaged cluster named name, or an error when it is not engaged.
	GetCluster(ctx context.Context, name multicluster.ClusterName) (cluster.Cluster, error)
}

// Reconciler sweeps one member's orphaned copies per request.
type Reconciler struct {
	// hub reads the hub cluster through the manager's cache; live reads it without one.
	hub  client.Client
	live client.Reader
	// informers are the hub cache's, whose MemberCluster keys addAll reads; nil lists instead.
	informers cache.Informers
	clusters  ClusterGetter
	recorder  events.EventRecorder
	swept     *prometheus.CounterVec
	opts      Options
	passes    *passes
}

// passes remembers when each member was last swept (see pace).
type passes struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	last  map[string]time.Time
}

// newPasses returns a record of no pass yet, timed by clk.
func newPasses(clk clock.PassiveClock) *passes {
	return &passes{clock: clk, last: map[string]time.Time{}}
}

// due returns how long until member name may be swept again, gap after its last pass (0: now).
// When it is 0 and record is set, a pass is recorded now.
func (p *passes) due(name string, gap time.Duration, record bool) time.Duration {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if last, ok := p.last[name]; ok && now.Sub(last) < gap {
		return gap - now.Sub(last)
	}
	if record {
		p.last[name] = now
	}
	return 0
}

// New returns the sweep of the hub manager mgr, reaching members through mgr's clusters.
func New(mgr mcmanager.Manager, opts Options) *Reconciler {
	if opts.HubName == "" {
		opts.HubName = labels.DefaultHubName
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MetricsRegisterer == nil {
		opts.MetricsRegisterer = ctrlmetrics.Registry
	}
	local := mgr.GetLocalManager()
	return &Reconciler{
		hub:       local.GetClient(),
		live:      local.GetAPIReader(),
		informers: local.GetCache(),
		clusters:  mgr,
		recorder:  local.GetEventRecorder("rayfleet-orphan-sweep"),
		opts:      opts,
		passes:    newPasses(clock.RealClock{}),
	}
}

// Reconcile sweeps the member the request names. Nothing is swept on a member that is not
// Ready: its cache may be stale or empty, and a copy deleted there now might be one the hub
// still needs once it can tell.
func (r *Reconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	if req.ClusterName != "" {
		ctrl.LoggerFrom(ctx).Error(nil, "Dropping a request for a member cluster's object", "cluster", req.ClusterName)
		return ctrl.Result{}, nil
	}
	name := req.Name
	var mc fleetv1alpha1.MemberCluster
	if err := r.hub.Get(ctx, types.NamespacedName{Name: name}, &mc); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get MemberCluster %s: %w", name, err)
	}
	if !sweepable(&mc) {
		// The MemberCluster watch brings the member back when it turns Ready.
		return ctrl.Result{}, nil
	}
	cl, err := r.clusters.GetCluster(ctx, multicluster.ClusterName(name))
	if err != nil {
		// Not engaged yet: its first RayService events arrive once it is.
		ctrl.LoggerFrom(ctx).V(1).Info("Member not engaged; not swept", "cluster", name, "reason", err.Error())
		return ctrl.Result{RequeueAfter: r.opts.Interval}, nil
	}
	if wait := r.pace(name); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	// The copies and the hub objects are only read: no copy of the caches' objects is made.
	var copies rayv1.RayServiceList
	if err := cl.GetClient().List(ctx, &copies, client.MatchingLabels{labels.OriginHub: r.opts.HubName},
		client.UnsafeDisableDeepCopy); err != nil {
		return ctrl.Result{}, fmt.Errorf("list RayServices of hub %s on cluster %s: %w", r.opts.HubName, name, err)
	}
	var errs []error
	var held origins
	for i := range copies.Items {
		if err := r.sweepCopy(ctx, &mc, cl.GetClient(), &copies.Items[i], &held); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: r.opts.Interval}, nil
}

// sweepCopy deletes one member copy if it is an orphan: judged from the caches first (cheap,
// and most copies are not), then again from uncached reads, since the hub cache may not have
// seen yet a RayService or a binding created a moment ago. held is reused for every copy of a
// pass.
func (r *Reconciler) sweepCopy(ctx context.Context, mc *fleetv1alpha1.MemberCluster, member client.Client, c *rayv1.RayService,
	held *origins) error {
	v, err := r.judgeCached(ctx, mc.Name, c, held)
	if err != nil || !v.Orphan {
		return err
	}
	if v, err = r.judge(ctx, r.live, mc.Name, c); err != nil || !v.Orphan {
		return err
	}
	// c belongs to the cache; the delete gets its own object.
	victim := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name}}
	uid := c.UID
	if err := member.Delete(ctx, victim, client.Preconditions{UID: &uid}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone already, or replaced by another object the next pass judges afresh.
			return nil
		}
		return fmt.Errorf("delete orphaned RayService %s/%s on cluster %s: %w", c.Namespace, c.Name, mc.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Swept an orphaned copy", "cluster", mc.Name, "rayservice", client.ObjectKeyFromObject(c), "why", v.Reason)
	// The copy is the related object: the events API folds events with the same regarding,
	// reason and related object into one series that keeps the first message, which would hide
	// every orphan swept from a member after the first.
	r.recorder.Eventf(mc, c, corev1.EventTypeNormal, ReasonOrphanSwept, "Sweep",
		"deleted RayService %s/%s on cluster %s: %s", c.Namespace, c.Name, mc.Name, v.Reason)
	r.swept.WithLabelValues(mc.Name).Inc()
	return nil
}

// judge reads the hub RayService and binding a copy's origin labels name through rd and
// decides.
func (r *Reconciler) judge(ctx context.Context, rd client.Reader, cluster string, c *rayv1.RayService) (Verdict, error) {
	j := Judged{HubName: r.opts.HubName, Cluster: cluster, Copy: c}
	origin, ok := Origin(c)
	if !ok {
		return Judge(j), nil
	}
	var hub rayv1.RayService
	switch err := rd.Get(ctx, origin, &hub); {
	case err == nil:
		j.Hub = &hub
	case !apierrors.IsNotFound(err):
		return Verdict{}, fmt.Errorf("get hub RayService %s for the copy on cluster %s: %w", origin, cluster, err)
	}
	var b fleetv1alpha1.RayServiceBinding
	switch err := rd.Get(ctx, origin, &b); {
	case err == nil:
		j.Binding = &b
	case !apierrors.IsNotFound(err):
		return Verdict{}, fmt.Errorf("get RayServiceBinding %s for the copy on cluster %s: %w", origin, cluster, err)
	}
	return Judge(j), nil
}

// origins holds what the hub cache has for one copy's origin while it is judged: the cache's
// own RayService and binding, copied shallowly (their maps and slices are the cache's, only
// read). A pass reuses one for all its copies, so judging allocates nothing per copy: a pass
// judges every copy on the member, and at 10,000 RayServices a List per copy held tens of MB
// in flight during placement.
type origins struct {
	hub     rayv1.RayService
	binding fleetv1alpha1.RayServiceBinding
}

// judgeCached is judge on the hub cache without deep copies, through held.
func (r *Reconciler) judgeCached(ctx context.Context, cluster string, c *rayv1.RayService, held *origins) (Verdict, error) {
	j := Judged{HubName: r.opts.HubName, Cluster: cluster, Copy: c}
	origin, ok := Origin(c)
	if !ok {
		return Judge(j), nil
	}
	switch err := r.hub.Get(ctx, origin, &held.hub, client.UnsafeDisableDeepCopy); {
	case err == nil:
		j.Hub = &held.hub
	case !apierrors.IsNotFound(err):
		return Verdict{}, fmt.Errorf("get hub RayService %s for the copy on cluster %s: %w", origin, cluster, err)
	}
	switch err := r.hub.Get(ctx, origin, &held.binding, client.UnsafeDisableDeepCopy); {
	case err == nil:
		j.Binding = &held.binding
	case !apierrors.IsNotFound(err):
		return Verdict{}, fmt.Errorf("get RayServiceBinding %s for the copy on cluster %s: %w", origin, cluster, err)
	}
	return Judge(j), nil
}

// pace returns how long to wait before sweeping member name again, or 0 to sweep now (and
// records the pass). Events ask for passes far more often than orphans appear (every copy
// created, every binding created asks for one on every member), and a pass reads every copy on
// the member: unpaced, placing 10,000 RayServices would keep the sweep reading copies the
// whole time. An orphan waits at most minPassGap longer for it. The event handlers queue a
// pass for when it is due already (queuePass); this is the check for a request that came
// early anyway.
func (r *Reconciler) pace(name string) time.Duration {
	return r.passes.due(name, r.passGap(), true)
}

// passGap is the least time between two passes on one member.
func (r *Reconciler) passGap() time.Duration {
	return min(minPassGap, r.opts.Interval)
}

// sweepable reports whether the member may be swept now: Ready and not being removed.
func sweepable(mc *fleetv1alpha1.MemberCluster) bool {
	return mc.DeletionTimestamp.IsZero() && meta.IsStatusConditionTrue(mc.Status.Conditions, fleetv1alpha1.ConditionReady)
}
