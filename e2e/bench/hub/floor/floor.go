// Package floor replays, for the scale benchmark's -floor mode, the API writes the hub makes
// to place a RayService, with none of the hub's own work: no cache, no decision, no reconcile
// queue. What it costs the API servers is the floor under any hub's placement on the machine.
//
// For each RayService the benchmark created (handed over in-process, with the create's
// answer), a worker writes, as the hub's first reconcile does and in its order: the finalizer
// merge patch (optimistic lock), the RayServiceBinding create, the first ControllerRevision
// (hub/revision.New), per member copy the member's Namespace (first copy on a member only) and
// a server-side apply of hub/propagation.MemberRayService under the hub's field manager, then
// the binding's and the RayService's status merge patches at once (the RayService's built by
// hub/aggregate from the applied copies). Events go out asynchronously, each on its own, as the
// hub's event broadcaster sends them: one "Placed" per RayService and one "Propagated" per copy.
// All as the hub's identity and user agent, so that the audit logs count them as the hub's and
// the API servers record the same field managers.
//
// What it does not replay: the hub's reads (all cached: the informers' lists and watches are
// approximated by Watchers, one watch per kind and member), its MemberCluster and Lease
// writes (on timers, whatever the RayServices do), the rollout's status details beyond the
// target revision and phase (stages, per-cluster rollout entries), a second reconcile's
// writes when the first one's status write raced a change, and the hub's own backoff between
// retries (an overloaded answer is retried after 200 ms, doubling, see send).
//
// After placement, the same Writer replays the hub's status path (-status-floor, status.go and
// statusrun.go): for each member status change a watch of the copies delivers, the binding
// and hub RayService status patches and the rollout's events the hub makes to show it.
package floor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rayfleet/rayfleet/e2e/bench/hub/simmembers"
	"github.com/rayfleet/rayfleet/hub/aggregate"
	"github.com/rayfleet/rayfleet/hub/propagation"
	"github.com/rayfleet/rayfleet/hub/revision"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/metapatch"
)

// Hub's defaults the replay mirrors.
const (
	// DefaultWorkers is the hub's --max-concurrent-reconciles.
	DefaultWorkers = 16
	// ReportingController is the hub RayService controller's event recorder name.
	ReportingController = "rayfleet-hub"
	// UserAgent makes the API servers record the hub's field manager ("rayfleet-hub") for the
	// replay's creates and patches, as for bin/hub's "rayfleet-hub/<version>".
	UserAgent = "rayfleet-hub/floor"
)

// Member is one simulated member: its name and its MemberCluster's labels.
type Member struct {
	Name   string
	Labels map[string]string
	// Client writes to the backing member API server as the hub's identity, one client (and
	// connection) per member as the hub has.
	Client client.Client
}

// Item is one RayService to place: the object as the benchmark's create returned it, and the
// members its copies go to (the placement the hub would decide).
type Item struct {
	RayService *rayv1.RayService
	Policy     string
	Members    []string
}

// Writer replays the hub's placement writes.
type Writer struct {
	hub     client.Client
	hubName string
	members map[string]*Member
	// nsDone records the members whose Namespace was created (or found existing).
	nsDone sync.Map
	events chan *eventsv1.Event
	// calls counts the requests sent, for a cross-check of the audit logs; eventsFailed the
	// events the API server did not take.
	calls, eventsFailed atomic.Int64
	// retries counts the writes sent again after an overloaded or timed-out answer.
	retries atomic.Int64
	// status is the status floor's part (statusrun.go).
	status statusReplay
}

// New is a Writer writing to the hub through hub and to members through their clients.
func New(hub client.Client, members []Member) *Writer {
	w := &Writer{
		hub: hub, hubName: labels.DefaultHubName, members: map[string]*Member{},
		events: make(chan *eventsv1.Event, 1<<16),
	}
	for i := range members {
		w.members[members[i].Name] = &members[i]
	}
	return w
}

// Calls is how many requests the writer sent.
func (w *Writer) Calls() int64 { return w.calls.Load() }

// Retries is how many writes were sent again after an overloaded or timed-out answer.
func (w *Writer) Retries() int64 { return w.retries.Load() }

// EventsFailed is how many events the hub API server refused or did not answer.
func (w *Writer) EventsFailed() int64 { return w.eventsFailed.Load() }

// Run places every item of items with workers at once until items is closed, then waits for
// the event sender to drain; it returns the first error (and stops placing after it).
func (w *Writer) Run(ctx context.Context, items <-chan Item, workers int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		w.sendEvents(ctx)
	}()
	var wg sync.WaitGroup
	var first error
	var once sync.Once
	for range max(1, workers) {
		wg.Go(func() {
			for it := range items {
				if ctx.Err() != nil {
					continue
				}
				if err := w.place(ctx, it); err != nil {
					once.Do(func() { first = err })
					cancel(err)
				}
			}
		})
	}
	wg.Wait()
	close(w.events)
	<-sent
	if first != nil {
		return first
	}
	return ctx.Err()
}

// place writes one RayService's placement, in the order of the hub's first reconcile.
func (w *Writer) place(ctx context.Context, it Item) error {
	rs := it.RayService
	key := rs.Namespace + "/" + rs.Name
	orig := rs.DeepCopy()
	controllerutil.AddFinalizer(rs, labels.MemberCleanupFinalizer)
	if err := w.send(ctx, func() error {
		return metapatch.Patch(ctx, w.hub, rs, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	}); err != nil {
		return fmt.Errorf("add finalizer to RayService %s on the hub: %w", key, err)
	}
	placed := slices.Sorted(slices.Values(it.Members))
	w.event(rs, "", corev1.EventTypeNormal, "Placed", "Place", "placed on "+strings.Join(placed, ", "))
	binding, err := w.createBinding(ctx, rs, it.Policy, placed)
	if err != nil {
		return err
	}
	cr, err := revision.New(rs, &revision.Content{Spec: rs.Spec}, 1, w.hub.Scheme())
	if err != nil {
		return fmt.Errorf("build revision of RayService %s: %w", key, err)
	}
	if err = w.send(ctx, func() error { return w.hub.Create(ctx, cr) }); err != nil {
		return fmt.Errorf("create revision %s of RayService %s on the hub: %w", cr.Name, key, err)
	}
	applied := make(map[string]*rayv1.RayService, len(placed))
	hashes := make(map[string]string, len(placed))
	for _, name := range placed {
		cp, hash, err := w.applyCopy(ctx, rs, cr.Name, name)
		if err != nil {
			return err
		}
		applied[name], hashes[name] = cp, hash
		w.event(rs, name, corev1.EventTypeNormal, "Propagated", "Propagate",
			fmt.Sprintf("applied RayService %s to cluster %s", key, name))
	}
	if err = w.writeStatus(ctx, rs, binding, cr.Name, placed, applied, hashes); err != nil {
		return err
	}
	w.status.remember(&placedRayService{rs: rs, binding: binding, rev: cr.Name, placed: placed, copies: applied, hashes: hashes})
	return nil
}

// createBinding creates the RayService's binding, controlled by it.
func (w *Writer) createBinding(ctx context.Context, rs *rayv1.RayService, policy string,
	placed []string) (*fleetv1alpha1.RayServiceBinding, error) {
	hash, err := propagation.SpecHash(&rs.Spec)
	if err != nil {
		return nil, fmt.Errorf("hash RayService %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	b := &fleetv1alpha1.RayServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, Name: rs.Name},
		Spec:       fleetv1alpha1.RayServiceBindingSpec{Clusters: slices.Clone(placed), PolicyName: policy, SpecHash: hash},
	}
	if err = controllerutil.SetControllerReference(rs, b, w.hub.Scheme()); err != nil {
		return nil, fmt.Errorf("own RayServiceBinding %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	if err = w.send(ctx, func() error { return w.hub.Create(ctx, b) }); err != nil {
		return nil, fmt.Errorf("create RayServiceBinding %s/%s on the hub: %w", rs.Namespace, rs.Name, err)
	}
	return b, nil
}

// applyCopy creates member's Namespace if no copy went there before, then server-side applies
// the copy of revision rev in the member's backing namespace, and returns the stored copy and
// its spec hash.
func (w *Writer) applyCopy(ctx context.Context, rs *rayv1.RayService, rev, member string) (*rayv1.RayService, string, error) {
	m := w.members[member]
	if m == nil {
		return nil, "", fmt.Errorf("RayService %s/%s placed on unknown member %s", rs.Namespace, rs.Name, member)
	}
	if err := w.ensureNamespace(ctx, m, rs.Namespace); err != nil {
		return nil, "", err
	}
	desired, err := propagation.MemberRayService(w.hubName, rs, member, m.Labels, nil)
	if err != nil {
		return nil, "", err
	}
	desired.Annotations[labels.Revision] = rev
	desired.Namespace = simmembers.BackingNamespace(member, rs.Namespace)
	data, err := propagation.ApplyData(desired)
	if err != nil {
		return nil, "", err
	}
	var stored *metav1.PartialObjectMetadata
	if err = w.send(ctx, func() error {
		var err error
		stored, err = metapatch.Apply(ctx, m.Client, desired, data, client.FieldOwner(labels.HubFieldManager), client.ForceOwnership)
		return err
	}); err != nil {
		return nil, "", fmt.Errorf("apply RayService %s/%s on member %s: %w", rs.Namespace, rs.Name, member, err)
	}
	got := &rayv1.RayService{ObjectMeta: stored.ObjectMeta, Spec: desired.Spec}
	return got, desired.Annotations[labels.SpecHash], nil
}

// ensureNamespace creates member's namespace ns (the backing server's, labelled as the
// simulated member's client labels it) once per member; the hub reads it from its cache and
// creates it when the member has no copy yet, so the floor writes it once per member too.
func (w *Writer) ensureNamespace(ctx context.Context, m *Member, ns string) error {
	if _, done := w.nsDone.Load(m.Name); done {
		return nil
	}
	obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   simmembers.BackingName(m.Name, ns),
		Labels: map[string]string{simmembers.MemberLabel: m.Name},
	}}
	if err := w.send(ctx, func() error { return m.Client.Create(ctx, obj) }); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s on member %s: %w", ns, m.Name, err)
	}
	w.nsDone.Store(m.Name, true)
	return nil
}

// writeStatus patches the binding's and the RayService's status at once, as the hub does.
func (w *Writer) writeStatus(ctx context.Context, rs *rayv1.RayService, b *fleetv1alpha1.RayServiceBinding,
	rev string, placed []string, applied map[string]*rayv1.RayService, hashes map[string]string) error {
	now := metav1.Now()
	clusters := make([]fleetv1alpha1.ClusterStatus, 0, len(placed))
	for _, name := range placed {
		clusters = append(clusters, aggregate.ClusterStatusOf(name, applied[name], hashes[name], now))
	}
	hubStatus := aggregate.HubStatus(rs, placed, clusters, now)
	next := bindingStatus(b, clusters, hubStatus.Conditions, rev, placed, now)
	var bindingErr, hubErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		orig := b.DeepCopy()
		b.Status = *next
		if err := w.send(ctx, func() error { return metapatch.PatchStatus(ctx, w.hub, b, client.MergeFrom(orig)) }); err != nil {
			bindingErr = fmt.Errorf("patch RayServiceBinding %s/%s status on the hub: %w", b.Namespace, b.Name, err)
		}
	})
	wg.Go(func() {
		orig := rs.DeepCopy()
		rs.Status = hubStatus
		if err := w.send(ctx, func() error { return metapatch.PatchStatus(ctx, w.hub, rs, client.MergeFrom(orig)) }); err != nil {
			hubErr = fmt.Errorf("patch RayService %s/%s status on the hub: %w", rs.Namespace, rs.Name, err)
		}
	})
	wg.Wait()
	return errors.Join(bindingErr, hubErr)
}

// bindingStatus is the binding's status after the first reconcile: the clusters, the rollout
// of the first revision under way, Placed and Propagated True, and Ready mirrored from the
// RayService's.
func bindingStatus(b *fleetv1alpha1.RayServiceBinding, clusters []fleetv1alpha1.ClusterStatus,
	hubConditions []metav1.Condition, rev string, placed []string, now metav1.Time) *fleetv1alpha1.RayServiceBindingStatus {
	next := b.Status.DeepCopy()
	next.ObservedGeneration = b.Generation
	next.Clusters = clusters
	next.Rollout = &fleetv1alpha1.RolloutStatus{
		TargetRevision: rev, Phase: fleetv1alpha1.RolloutProgressing, StartTime: &now,
		Updated: fmt.Sprintf("0/%d", len(placed)),
		Message: fmt.Sprintf("rolling out revision %s to %d clusters", rev, len(placed)),
	}
	set := func(c metav1.Condition) {
		c.ObservedGeneration, c.LastTransitionTime = b.Generation, now
		meta.SetStatusCondition(&next.Conditions, c)
	}
	set(metav1.Condition{Type: fleetv1alpha1.ConditionPlaced, Status: metav1.ConditionTrue,
		Reason: fleetv1alpha1.ReasonClustersChosen, Message: fmt.Sprintf("placed on %s", strings.Join(placed, ", "))})
	set(metav1.Condition{Type: fleetv1alpha1.ConditionPropagated, Status: metav1.ConditionTrue,
		Reason: fleetv1alpha1.ReasonApplied, Message: fmt.Sprintf("applied on %d/%d clusters", len(placed), len(placed))})
	if ready := meta.FindStatusCondition(hubConditions, string(rayv1.RayServiceReady)); ready != nil {
		set(metav1.Condition{Type: fleetv1alpha1.ConditionReady, Status: ready.Status, Reason: ready.Reason, Message: ready.Message})
	}
	return next
}

// event queues one event about rs (related to member's MemberCluster when member is set).
func (w *Writer) event(rs *rayv1.RayService, member, eventType, reason, action, note string) {
	now := time.Now()
	ev := &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, Name: fmt.Sprintf("%s.%x", rs.Name, now.UnixNano())},
		EventTime:  metav1.NewMicroTime(now),
		Regarding: corev1.ObjectReference{
			APIVersion: rayv1.GroupVersion.String(), Kind: "RayService", Namespace: rs.Namespace, Name: rs.Name,
			UID: rs.UID, ResourceVersion: rs.ResourceVersion,
		},
		ReportingController: ReportingController, ReportingInstance: reportingInstance,
		Type: eventType, Reason: reason, Action: action, Note: note,
	}
	if member != "" {
		ev.Related = &corev1.ObjectReference{
			APIVersion: fleetv1alpha1.GroupVersion.String(), Kind: "MemberCluster", Name: member,
		}
	}
	w.events <- ev
}

// send makes one write, retried while the API server answers that it is overloaded or timed
// out, as the hub would retry it on its next reconcile (sooner here: the floor measures the
// API servers, not the hub's backoff). A retried create that finds its object, or a retried
// optimistic patch that finds it changed, counts as done: the first attempt landed.
func (w *Writer) send(ctx context.Context, write func() error) error {
	attempt := 0
	return retry.OnError(overloaded, func(err error) bool {
		return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err) ||
			apierrors.IsServiceUnavailable(err)
	}, func() error {
		attempt++
		w.calls.Add(1)
		if attempt > 1 {
			w.retries.Add(1)
		}
		err := write()
		if attempt > 1 && (apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err)) {
			return nil
		}
		return err
	})
}

// overloaded is send's backoff.
var overloaded = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 6}

// reportingInstance names the recorder's instance as client-go's does: controller and host.
var reportingInstance = func() string {
	host, _ := os.Hostname()
	return ReportingController + "-" + host
}()

// sendEvents creates each queued event in its own goroutine, as client-go's event broadcaster
// does (none of the replay's events is a repeat, so none becomes a series); eventsInFlight
// bounds them, where the hub's broadcaster has no bound but its HTTP/2 connection's streams.
// An event that fails is counted, not retried: events are best effort for the hub too.
func (w *Writer) sendEvents(ctx context.Context) {
	sem := make(chan struct{}, eventsInFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	for ev := range w.events {
		if ctx.Err() != nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			w.calls.Add(1)
			if err := w.hub.Create(ctx, ev); err != nil {
				w.eventsFailed.Add(1)
			}
		})
	}
}

// eventsInFlight bounds the events being created at once.
const eventsInFlight = 100
