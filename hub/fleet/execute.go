package fleet

// Phase: execute. Carries out a decision: binding, revisions, copies, route; records results.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/hub/revision"
	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/podsecurity"
)

// results is what the executor did, per cluster; the status is computed from the group, the
// decision and these.
type results struct {
	// copies are the copies as they stand after this reconcile, for the clusters read or
	// written (nil: none there).
	copies map[string]*rayv1.RayService
	// applyErrs are the clusters where writing failed, to be retried.
	applyErrs map[string]error
	// refusals are the member refusals in force after this reconcile: the group's plus new ones.
	refusals map[string]fleetv1alpha1.ClusterRefusal
	// newRefusal is set when this reconcile met a refusal: the next one re-plans without it.
	newRefusal bool
	// kept are clusters no longer placed whose copy is still there (being deleted or not
	// removable now).
	kept []string
	// trafficErr is why the route could not be written to the traffic cluster.
	trafficErr error
	// legacyRoute is the route an earlier hub wrote in the Gateway's namespace while it stays
	// (until the gateway accepted the route in the RayService's namespace); nil when none.
	legacyRoute *types.NamespacedName
	// binding is the binding as the API server returned it when the executor created or
	// patched it; nil when it wrote none (the group's is current then).
	binding *fleetv1alpha1.RayServiceBinding
	// staleBinding is set when the decision was not carried out because the cache's binding
	// is older than the API server's: it may rest on clusters or a revision a newer decision
	// replaced, and removing or applying from it would undo that one.
	staleBinding bool
	// misfit are the members the decision newly chose that other placements, recorded since
	// its group was read, left too little room on: nothing of it was carried out.
	misfit []string
}

// removalsOf names the clusters whose copy the decision removes, sorted.
func removalsOf(d *decision) []string {
	return actionsOf(d, propagation.Remove)
}

// copyWrites names the clusters whose copy the decision applies or removes, sorted.
func copyWrites(d *decision) []string {
	return actionsOf(d, propagation.Apply, propagation.Remove)
}

// actionsOf names the clusters whose action is one of kinds, sorted.
func actionsOf(d *decision, kinds ...propagation.Kind) []string {
	var out []string
	for name, a := range d.actions {
		if slices.Contains(kinds, a.Kind) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// bindingCurrent reports whether the group's binding, read from the cache, is the one the API
// server holds. After the hub's API server was unreachable, informers relist only after their
// backoff (up to tens of seconds) while writes already succeed: a decision from the older
// binding would delete copies a newer one names.
func (r *Reconciler) bindingCurrent(ctx context.Context, g *group) (bool, error) {
	if g.binding == nil {
		return false, nil
	}
	var live fleetv1alpha1.RayServiceBinding
	if err := r.apiReader.Get(ctx, g.key, &live); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("get RayServiceBinding %s from the API server: %w", g.key, err)
	}
	return live.UID == g.binding.UID && live.ResourceVersion == g.binding.ResourceVersion, nil
}

// execute writes the decision: the binding's spec, then per cluster the apply or delete.
// Member errors are collected per cluster and never stop the other clusters. It changes
// neither the group nor the decision: what it wrote is in the results.
func (r *Reconciler) execute(ctx context.Context, g *group, d *decision) (*results, error) {
	res := &results{
		copies:    map[string]*rayv1.RayService{},
		applyErrs: map[string]error{},
		refusals:  maps.Clone(g.refusals),
		kept:      slices.Clone(d.kept),
	}
	for name, m := range g.members {
		if m.readErr == nil {
			res.copies[name] = m.copy
		}
	}
	// Recorded before the binding names a member: once it does, the member counts the copy as
	// current and nothing reserves for it again.
	if res.misfit = r.reserved.Record(d.reserve...); len(res.misfit) > 0 {
		ctrl.LoggerFrom(ctx).Info("Holding a decision: placements recorded since it was read filled members it chose",
			"clusters", res.misfit)
		r.metrics.decision(placement.ResultReservationMisfit)
		return res, nil
	}
	binding, err := r.writeBindingSpec(ctx, g, d)
	if err != nil {
		return res, err
	}
	res.binding = binding
	if binding == nil && len(copyWrites(d)) > 0 {
		// A spec patch is locked to the version read, so one that succeeded proves the group
		// current; without one, the binding is checked against the API server's first.
		current, err := r.bindingCurrent(ctx, g)
		if err != nil {
			return res, err
		}
		if !current {
			ctrl.LoggerFrom(ctx).Info("Holding a decision made from a cached binding older than the API server's",
				"clusters", copyWrites(d))
			res.staleBinding = true
			return res, nil
		}
	}
	if d.rollout != nil {
		// The target revision exists before any copy names it.
		if _, _, err := revision.Ensure(ctx, r.client, g.hub, d.rollout.targetContent, g.history); err != nil {
			return res, err
		}
		if binding == nil {
			binding = g.binding
		}
		if written, err := r.consumeApproval(ctx, g.key, binding); err != nil {
			return res, err
		} else if written != nil {
			res.binding = written
		}
	}
	log := ctrl.LoggerFrom(ctx)
	for _, name := range d.placed {
		a := d.actions[name]
		log.V(1).Info("Propagation", "cluster", name, "action", a.String())
		if a.Err != nil {
			res.applyErrs[name] = fmt.Errorf("cluster %s: %w", name, a.Err)
			continue
		}
		switch {
		case a.Kind == propagation.Apply:
			r.applyTo(ctx, g, res, name, a.Desired)
		case a.Reason == propagation.ReasonInSync && g.members[name].covered == "":
			// Compared whole just now: remembered until the copy's generation moves.
			r.rememberCovered(name, g.members[name].copy, a.Desired)
		}
	}
	for _, name := range removalsOf(d) {
		a := d.actions[name]
		log.V(1).Info("Propagation", "cluster", name, "action", a.String())
		reason, why := "Removed", "no longer placed there"
		if a.Reason == propagation.ReasonPurged {
			reason, why = "Purged", "failed over from, and the clusters replacing it are done"
		}
		gone, err := r.deleteCopy(ctx, g, name, reason, why)
		if err != nil {
			log.Error(err, "Removing the copy from a member failed", "cluster", name)
		}
		if gone {
			res.copies[name] = nil
		} else {
			res.kept = append(res.kept, name)
		}
	}
	slices.Sort(res.kept)
	res.kept = slices.Compact(res.kept)
	if res.legacyRoute, res.trafficErr = r.applyTraffic(ctx, g, d.traffic); res.trafficErr != nil {
		log.Error(res.trafficErr, "Writing the route failed")
	}
	if d.rollout != nil {
		prune := revision.Prune(g.history, d.rollout.keep(g), d.rollout.historyLimit)
		if err := revision.Delete(ctx, r.client, g.history, prune); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Pruning revisions failed", "revisions", prune)
		}
	}
	return res, nil
}

// writeBindingSpec creates the binding, owned by the hub RayService, or patches its spec when
// the decision changed it, and returns it as written; nil when it was as decided already.
func (r *Reconciler) writeBindingSpec(ctx context.Context, g *group, d *decision) (*fleetv1alpha1.RayServiceBinding, error) {
	spec := fleetv1alpha1.RayServiceBindingSpec{Clusters: slices.Clone(d.placed), PolicyName: g.policy.name, SpecHash: g.hash}
	if d.invalid != nil && g.binding != nil {
		// The invalid spec is not propagated; the binding keeps the hash of the last one that was.
		spec.SpecHash = g.binding.Spec.SpecHash
	}
	if g.binding == nil {
		b := &fleetv1alpha1.RayServiceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: g.hub.Namespace, Name: g.hub.Name},
			Spec:       spec,
		}
		if err := controllerutil.SetControllerReference(g.hub, b, r.client.Scheme()); err != nil {
			return nil, fmt.Errorf("own RayServiceBinding %s: %w", g.key, err)
		}
		if err := r.client.Create(ctx, b); err != nil {
			return nil, fmt.Errorf("create RayServiceBinding %s: %w", g.key, err)
		}
		return b, nil
	}
	if slices.Equal(g.binding.Spec.Clusters, spec.Clusters) && g.binding.Spec.PolicyName == spec.PolicyName &&
		g.binding.Spec.SpecHash == spec.SpecHash {
		return nil, nil
	}
	b := g.binding.DeepCopy()
	b.Spec = spec
	// Locked to the version read: a decision made from a cache that lags the API server must
	// not replace a newer decision (and then remove the copies that one placed).
	if err := r.client.Patch(ctx, b, client.MergeFromWithOptions(g.binding, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, fmt.Errorf("patch RayServiceBinding %s: %w", g.key, err)
	}
	return b, nil
}

// consumeApproval removes the binding's approval annotation once the binding records the stage
// it approved as started: an approval opens one stage of one revision once, and a later
// rollout of the same revision (after a rollback and a spec that came back) asks again. It is
// removed only after the start was recorded, so a failed status write cannot lose both. It
// returns the binding as patched; nil when the approval stays.
func (r *Reconciler) consumeApproval(ctx context.Context, key types.NamespacedName, binding *fleetv1alpha1.RayServiceBinding) (*fleetv1alpha1.RayServiceBinding, error) {
	approval := binding.Annotations[labels.ApprovedStage]
	st := binding.Status.Rollout
	if approval == "" || st == nil {
		return nil, nil
	}
	used := false
	for _, stage := range st.Stages {
		used = used || (stage.Approved && approval == st.TargetRevision+"/"+stage.Name)
	}
	if bg := st.BlueGreen; bg != nil {
		// A BlueGreen approval is used once the rollout went past it: a first step taken, or
		// green given all of the traffic.
		used = used || (approval == st.TargetRevision+"/"+fleetv1alpha1.BlueGreenShiftStage && bg.GreenPercent > 0) ||
			(approval == st.TargetRevision+"/"+fleetv1alpha1.BlueGreenPromoteStage && bg.Step == fleetv1alpha1.BlueGreenHolding)
	}
	if !used {
		return nil, nil
	}
	b := binding.DeepCopy()
	delete(b.Annotations, labels.ApprovedStage)
	if err := r.client.Patch(ctx, b, client.MergeFrom(binding)); err != nil {
		return nil, fmt.Errorf("remove the used approval from RayServiceBinding %s: %w", key, err)
	}
	return b, nil
}

// applyTo writes desired to one member: the namespace first when the member has no copy, then
// a server-side apply. A refusal by the member is recorded; any other error is retried.
func (r *Reconciler) applyTo(ctx context.Context, g *group, res *results, name string, desired *rayv1.RayService) {
	m := g.members[name]
	if m.copy == nil {
		if err := ensureNamespace(ctx, m.client, g.hub.Namespace, podSecurityLevel(m.mc)); err != nil {
			r.applyFailed(ctx, g, res, name, err)
			return
		}
	}
	key, stored := client.ObjectKeyFromObject(desired), ""
	r.ownWrites.start(name, key)
	defer func() { r.ownWrites.done(name, key, stored) }()
	got, err := applyCopy(ctx, m.client, desired, m.copy)
	if err != nil {
		r.applyFailed(ctx, g, res, name, err)
		return
	}
	res.copies[name] = got
	stored = got.GetResourceVersion()
	r.rememberCovered(name, got, desired)
	r.recorder.Eventf(g.hub, memberRef(name), corev1.EventTypeNormal, "Propagated", "Propagate",
		"applied RayService %s to cluster %s", g.key, name)
}

// rememberCovered records that copy, on cluster name, contains desired's spec.
func (r *Reconciler) rememberCovered(name string, copy, desired *rayv1.RayService) {
	if copy == nil || desired == nil {
		return
	}
	if digest, err := propagation.SpecHash(&desired.Spec); err == nil {
		r.covered.Record(name, copy, digest)
	}
}

// applyFailed records why a copy could not be written to cluster name: a refusal by the
// member (recorded, not retried until it is due) or an error retried on the next reconcile.
func (r *Reconciler) applyFailed(ctx context.Context, g *group, res *results, name string, err error) {
	if ref, ok := propagation.RefusalOf(err); ok {
		r.recordRefusal(g, res, name, ref)
		res.newRefusal = true
		return
	}
	res.applyErrs[name] = fmt.Errorf("cluster %s: %w", name, err)
	ctrl.LoggerFrom(ctx).Error(err, "Propagating to member failed", "cluster", name)
}

// ensureNamespace creates the namespace on the member if it is missing, labelled for Pod
// Security admission to enforce level (at the latest version) on every Pod in it, whoever
// writes the Pod templates, and labelled as created by the hub, which the member's guard
// requires of a namespace it did not allow otherwise. A namespace that exists is left as it
// is: one the hub did not create is the member admin's (the guard refuses the copy there
// unless the admin allowed it, and the refusal names the namespace), and one it created before
// it labelled them is labelled by the membership controller once no Pod in it breaks the level.
// A namespace being deleted there is a refusal: nothing can be created in it until it is gone.
func ensureNamespace(ctx context.Context, cl client.Client, name, level string) error {
	var ns corev1.Namespace
	err := cl.Get(ctx, client.ObjectKey{Name: name}, &ns)
	if err == nil {
		if !ns.DeletionTimestamp.IsZero() {
			return propagation.NamespaceTerminating(name)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get namespace %s: %w", name, err)
	}
	ns.Name = name
	ns.Labels = podsecurity.Labels(level)
	ns.Labels[labels.HubNamespace] = labels.HubNamespaceCreated
	if err := cl.Create(ctx, &ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// removeCopy deletes the hub's copy on one cluster, as read into the group. gone is true once
// the cluster holds no copy of ours (a foreign object is left alone and counts as gone); a copy
// whose deletion waits on the spoke's finalizer is not gone yet and is looked at again next
// time.
func (r *Reconciler) removeCopy(ctx context.Context, g *group, name string) (gone bool, err error) {
	return r.deleteCopy(ctx, g, name, "Removed", "no longer placed there")
}

// deleteCopy is removeCopy with the event's reason and the words saying why.
func (r *Reconciler) deleteCopy(ctx context.Context, g *group, name, reason, why string) (gone bool, err error) {
	m := g.members[name]
	if m == nil || m.readErr != nil {
		return false, nil
	}
	member := m.copy
	if member == nil || propagation.OwnershipOf(r.opts.HubName, g.hub, member) == propagation.Foreign {
		return true, nil
	}
	if !member.DeletionTimestamp.IsZero() || !r.deletes.due(member.UID, g.now) {
		return false, nil
	}
	if err := m.client.Delete(ctx, member, client.Preconditions{UID: &member.UID}); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("delete RayService %s on cluster %s: %w", g.key, name, err)
	}
	r.deletes.issued(member.UID, g.now)
	r.covered.Forget(name, g.key)
	r.recorder.Eventf(g.hub, memberRef(name), corev1.EventTypeNormal, reason, "Remove",
		"deleted RayService %s from cluster %s: %s", g.key, name, why)
	return false, nil
}

// redeleteAfter is how long the hub trusts a delete it issued before issuing it again for a
// copy that still shows no deletionTimestamp.
const redeleteAfter = time.Minute

// deletes remembers the copies the hub deleted recently, by UID. After a member's outage the
// hub's cache of it may lag the delete for tens of seconds, the copy looking untouched; without
// this every resync would delete it again and record another event.
type deletes struct {
	mu     sync.Mutex
	issues map[types.UID]time.Time
}

// due reports whether a delete of uid may be issued at now.
func (d *deletes) due(uid types.UID, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.issues[uid]
	return !ok || now.Sub(at) >= redeleteAfter
}

// issued records a delete of uid at now, and forgets deletes long past.
func (d *deletes) issued(uid types.UID, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.issues == nil {
		d.issues = map[types.UID]time.Time{}
	}
	for u, at := range d.issues {
		if now.Sub(at) >= redeleteAfter {
			delete(d.issues, u)
		}
	}
	d.issues[uid] = now
}

// memberRef is the MemberCluster an event about one cluster's copy relates to. The events API
// folds events with the same object, reason and related object into one series and keeps the
// first message, so without it "Removed from us" would hide a later "Removed from eu".
func memberRef(name string) *fleetv1alpha1.MemberCluster {
	return &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// applyTraffic writes the route and its backends to the traffic cluster, in the RayService's
// namespace (created on a member traffic cluster when missing, as for a copy), then retires the
// route an earlier hub wrote in the Gateway's namespace once the gateway accepted this one. It
// returns that earlier route while it stays.
func (r *Reconciler) applyTraffic(ctx context.Context, g *group, td *trafficDecision) (*types.NamespacedName, error) {
	if td == nil {
		return nil, nil
	}
	if td.err != nil {
		return nil, td.err
	}
	reader, w, err := r.trafficClients(ctx, &td.spec)
	if err != nil {
		return nil, err
	}
	if td.spec.Cluster != "" && !g.route.state.Exists {
		if err := ensureNamespace(ctx, w, g.key.Namespace, podSecurityLevel(g.memberClusters[td.spec.Cluster])); err != nil {
			return nil, fmt.Errorf("traffic cluster %s: %w", td.spec.Cluster, err)
		}
	}
	if g.route.live == nil {
		err = traffic.Apply(ctx, w, reader, td.objs)
	} else {
		err = traffic.Write(ctx, w, reader, td.objs, g.route.live)
	}
	if err != nil {
		return nil, err
	}
	legacy, ok := traffic.LegacyKey(g.key, &td.spec)
	if !ok || r.legacyGone.has(td.spec.Cluster, legacy) {
		return nil, nil
	}
	cached, _ := r.legacyReader(ctx, td.spec.Cluster, legacy, reader)
	remains, err := traffic.RetireLegacy(ctx, w, reader, cached, legacy, r.opts.HubName, g.route.state)
	if err != nil {
		// The new route is written; the earlier one is retried next time.
		ctrl.LoggerFrom(ctx).Error(err, "Retiring the route in the Gateway's namespace failed", "route", legacy.Route)
	}
	if remains {
		return &legacy.Route, nil
	}
	if err == nil {
		r.legacyGone.add(td.spec.Cluster, legacy)
	}
	return nil, nil
}

// legacyRoutes remembers, by traffic cluster, the routes earlier hubs wrote in a Gateway's
// namespace (traffic.LegacyKey) that are gone: no later hub writes one, so that once retired
// (or found absent) a route is not looked for again at every resync.
type legacyRoutes struct {
	mu   sync.Mutex
	gone map[legacyRoute]bool
}

type legacyRoute struct {
	cluster string
	key     traffic.RouteKey
}

func (l *legacyRoutes) has(cluster string, key traffic.RouteKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gone[legacyRoute{cluster, key}]
}

func (l *legacyRoutes) add(cluster string, key traffic.RouteKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone == nil {
		l.gone = map[legacyRoute]bool{}
	}
	l.gone[legacyRoute{cluster, key}] = true
}

// forget drops what is remembered of the RayService key.
func (l *legacyRoutes) forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.gone {
		if k.key.RayService == key {
			delete(l.gone, k)
		}
	}
}

// recordRefusal notes a member's refusal of the copy and, when it is new (another rule, or a
// spec not refused before), says so with a Warning event related to the member.
func (r *Reconciler) recordRefusal(g *group, res *results, name string, ref *propagation.Refusal) {
	prev, had := res.refusals[name]
	rec := fleetv1alpha1.ClusterRefusal{
		Cluster: name, SpecHash: g.hash, Rule: ref.Rule, Message: ref.Message,
		RetryTime: metav1.NewTime(g.now.Add(ref.Retry).Truncate(time.Second)),
	}
	res.refusals[name] = rec
	if had && prev.Rule == rec.Rule && prev.SpecHash == rec.SpecHash {
		return
	}
	r.metrics.refused(name, ref.Rule)
	r.recorder.Eventf(g.hub, memberRef(name), corev1.EventTypeWarning, fleetv1alpha1.ReasonRefusedByMember, "Propagate",
		"cluster %s refused RayService %s: %s; nothing was created there, and the hub places it elsewhere until %s",
		name, g.key, refusalText(rec), rec.RetryTime.UTC().Format(time.RFC3339))
}

// wantProbes tells the probes which addresses key routes to; nil forgets key.
func (r *Reconciler) wantProbes(key types.NamespacedName, targets map[string]string) {
	if r.opts.Probes != nil {
		r.opts.Probes.Want(key, targets)
	}
}
