// Package membership keeps the hub's MemberClusters up to date: whether the hub engaged each
// member (Joined), can talk to it (Reachable) and hears its spoke agent (AgentReady), a mirror
// of the member's ClusterReport, and when it was first Ready (firstReadyTime), so that a member
// back from an outage is told apart from a new one: its return is a Readmitted event and counted
// in rayfleet_member_readmissions_total. CredentialsValid (credentials.go) warns before the
// bootstrap token of a member's kubeconfig expires and when the member refuses the hub its
// tokens (token.go). It also labels for Pod Security the namespaces a hub
// without those labels created on the member, when no Pod there breaks the member's level
// (podsecurity.go). Status is a pure function of what one reconcile saw (conditions.go); the
// reconciler only reads and writes. Provider (provider.go) engages the members from their
// kubeconfig Secrets, refusing kubeconfigs that would make the hub run a program or read a file
// (shared/hubaccess).
// It imports only shared/: never spoke/, the other hub packages, shared/localfleet or, outside
// tests, shared/testing.
package membership

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// Defaults of Options.
const (
	// DefaultHeartbeatTimeout is four missed reports of a spoke writing every 10 s.
	DefaultHeartbeatTimeout = 40 * time.Second
	// DefaultResyncInterval matches the spoke's report interval, so that a heartbeat going
	// stale (which produces no event) is noticed within one report.
	DefaultResyncInterval = 10 * time.Second
	// DefaultProbeTimeout bounds the reachability probe: a member slower than this is counted
	// as failing, which the hysteresis absorbs when it happens once.
	DefaultProbeTimeout = 5 * time.Second
)

// waitingRequeue is how soon a member that is merely waiting is looked at again: the provider
// still connecting to it, or its spoke's first heartbeat not yet there. Both clear within
// seconds of a join, and the resync alone would show the member Ready up to ten seconds late.
// An unreachable member keeps the resync, so that the probe failures its hysteresis counts are
// not bunched up.
const waitingRequeue = 2 * time.Second

// EngageGrace is how long after the hub starts (or a standby replica starts to lead, see Start)
// a member it has not engaged yet is taken for one still being engaged rather than one that is
// down. The kubeconfig provider engages the members one by one as its cache delivers their
// Secrets, a few milliseconds after the controllers start; a restarted hub that wrote "not
// engaged" meanwhile would turn every member NotReady for a moment, and whatever follows
// Ready (placement, the traffic split) would act on it.
const EngageGrace = 30 * time.Second

// engageRetry is how soon a member that was Joined, and that a hub within EngageGrace of its
// start has not engaged yet, is looked at again.
const engageRetry = 500 * time.Millisecond

// ReasonReadmitted is the reason of the Normal event on a MemberCluster whose Ready condition
// turned True again after an outage (not its first Ready).
const ReasonReadmitted = "Readmitted"

// conflictRequeue retries a status write that lost a race soon, with the fresh object: the
// conflict only means someone else wrote first.
const conflictRequeue = time.Second

// Options configure the reconciler; zero fields take the defaults.
type Options struct {
	// HubNamespace holds the members' kubeconfig Secrets; labels.DefaultHubNamespace if empty.
	HubNamespace string
	// HubName is the hub's --hub-name, whose copies' namespaces it labels (podsecurity.go);
	// labels.DefaultHubName if empty.
	HubName string
	// PodSecurityRecheck is how long a namespace found holding Pods that break the member's
	// level keeps that verdict before it is dry-run again; DefaultPodSecurityRecheck if zero.
	PodSecurityRecheck time.Duration
	// HeartbeatTimeout is how old a ClusterReport heartbeat may be for AgentReady.
	HeartbeatTimeout time.Duration
	// ResyncInterval is how often every MemberCluster is reconciled without an event.
	ResyncInterval time.Duration
	// ProbeTimeout bounds the reachability probe.
	ProbeTimeout time.Duration
	// CredentialExpiryWarning is how long before a member's bootstrap token expires its
	// CredentialsValid condition turns False; DefaultCredentialExpiryWarning if zero.
	CredentialExpiryWarning time.Duration
	// MintFailures reports the members' TokenRequest failures (the kubeconfig Provider); nil
	// when the hub's provider mints no tokens.
	MintFailures MintFailures
	// Clock is injected for tests; the real clock if nil.
	Clock clock.PassiveClock
	// Registerer receives the metrics; controller-runtime's registry in production.
	Registerer prometheus.Registerer
}

// Reconciler reconciles MemberClusters on the hub.
type Reconciler struct {
	hub      client.Client
	clusters ClusterGetter
	recorder events.EventRecorder
	opts     Options
	metrics  *metrics

	mu      sync.Mutex
	streaks map[string]FailureStreak // by member; in memory only: after a restart, hysteresis starts afresh
	// seen is the heartbeat last seen of each member, in memory only: after a restart,
	// freshness counts from the first observation.
	seen map[string]HeartbeatSeen
	// verdicts are the namespaces found unlabellable, by member (podsecurity.go).
	verdicts verdicts

	// started is when the reconciler first reconciled, for EngageGrace.
	started *Start
}

// New returns a Reconciler reading and writing the hub through hub and reaching members
// through clusters.
func New(hub client.Client, clusters ClusterGetter, recorder events.EventRecorder, opts Options) (*Reconciler, error) {
	if opts.HubNamespace == "" {
		opts.HubNamespace = labels.DefaultHubNamespace
	}
	if opts.HubName == "" {
		opts.HubName = labels.DefaultHubName
	}
	if opts.PodSecurityRecheck <= 0 {
		opts.PodSecurityRecheck = DefaultPodSecurityRecheck
	}
	if opts.HeartbeatTimeout <= 0 {
		opts.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if opts.ResyncInterval <= 0 {
		opts.ResyncInterval = DefaultResyncInterval
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = DefaultProbeTimeout
	}
	if opts.CredentialExpiryWarning <= 0 {
		opts.CredentialExpiryWarning = DefaultCredentialExpiryWarning
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Registerer == nil {
		return nil, errors.New("membership: Options.Registerer is required")
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Reconciler{hub: hub, clusters: clusters, recorder: recorder, opts: opts, metrics: m,
		streaks: map[string]FailureStreak{}, seen: map[string]HeartbeatSeen{}, started: &Start{}}, nil
}

// SetupWithManager registers the reconciler with the hub's local manager: MemberClusters are
// hub objects; members are reached through the ClusterGetter, not watched, so that a member
// without the fleet CRDs or with a dead API server still gets a status.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	hubNamespace := r.opts.HubNamespace
	secretToMember := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if o.GetNamespace() != hubNamespace {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: o.GetName()}}}
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named("membercluster").
		// Status writes of our own must not trigger another reconcile.
		For(&fleetv1alpha1.MemberCluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, secretToMember).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the MemberCluster controller: %w", err)
	}
	return nil
}

// Reconcile computes one MemberCluster's status and writes it when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", req.Name)
	var mc fleetv1alpha1.MemberCluster
	if err := r.hub.Get(ctx, req.NamespacedName, &mc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting MemberCluster %s: %w", req.Name, err)
	}
	if mc.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	obs, err := r.observe(ctx, &mc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if r.stillEngaging(&mc, obs.Join) {
		log.V(1).Info("Waiting for the hub, just started, to engage a member that was Joined; status kept")
		return ctrl.Result{RequeueAfter: engageRetry}, nil
	}
	st := Status(mc.Status, obs)
	r.rememberHeartbeat(mc.Name, &st)
	r.metrics.observe(mc.Name, &st, obs.Now)
	requeue := r.requeueAfter(&st)
	if equality.Semantic.DeepEqual(mc.Status, st) {
		return ctrl.Result{RequeueAfter: requeue}, nil
	}
	orig := mc.DeepCopy()
	prev := mc.Status
	mc.Status = st
	if err := r.hub.Status().Patch(ctx, &mc, client.MergeFrom(orig), client.FieldOwner(labels.HubFieldManager)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return ctrl.Result{RequeueAfter: conflictRequeue}, nil
		}
		return ctrl.Result{}, fmt.Errorf("patching status of MemberCluster %s: %w", mc.Name, err)
	}
	r.recordTransitions(&mc, prev.Conditions, st.Conditions)
	// Only after the write: a lost write recomputes the same transition on the next reconcile,
	// so each return is announced and counted once.
	if notReadyFor, ok := readmission(&prev, &st); ok {
		r.metrics.readmitted(mc.Name)
		if r.recorder != nil {
			r.recorder.Eventf(&mc, nil, corev1.EventTypeNormal, ReasonReadmitted, "Readmit", "%s", readmittedMessage(notReadyFor))
		}
		log.Info("member is Ready again after an outage", "notReadyFor", notReadyFor)
	}
	log.V(1).Info("updated MemberCluster status", "ready", meta.IsStatusConditionTrue(st.Conditions, fleetv1alpha1.ConditionReady))
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// requeueAfter is the resync, or waitingRequeue for a member that is waiting to be engaged or
// for its first heartbeat.
func (r *Reconciler) requeueAfter(st *fleetv1alpha1.MemberClusterStatus) time.Duration {
	joined := meta.FindStatusCondition(st.Conditions, fleetv1alpha1.ConditionJoined)
	agent := meta.FindStatusCondition(st.Conditions, fleetv1alpha1.ConditionAgentReady)
	waiting := (joined != nil && joined.Reason == fleetv1alpha1.ReasonEngaging) ||
		(meta.IsStatusConditionTrue(st.Conditions, fleetv1alpha1.ConditionReachable) &&
			agent != nil && agent.Reason == fleetv1alpha1.ReasonClusterReportNotFound)
	if waiting {
		return min(waitingRequeue, r.opts.ResyncInterval)
	}
	return r.opts.ResyncInterval
}

// stillEngaging reports whether the member's status should be kept as it is for now: it was
// Joined, the hub started less than EngageGrace ago and has not engaged it yet, and nothing
// else is wrong with its Secret.
func (r *Reconciler) stillEngaging(mc *fleetv1alpha1.MemberCluster, js JoinState) bool {
	// Read first: the first reconcile is the start.
	within := r.started.Since(r.opts.Clock) < EngageGrace
	return within && !js.Joined && js.Reason == fleetv1alpha1.ReasonEngaging &&
		meta.IsStatusConditionTrue(mc.Status.Conditions, fleetv1alpha1.ConditionJoined)
}

// Start is when a reconciler first reconciled, the start EngageGrace counts from: with leader
// election, when its replica began to lead, which is when the provider (a controller that
// runs on the leader only) began to engage the members. A replica that waited as a standby
// for an hour gets its grace too. The zero value is unset: the first Since sets it.
type Start struct {
	once sync.Once
	at   time.Time
}

// StartedAt returns a Start that began at t.
func StartedAt(t time.Time) *Start {
	return &Start{at: t}
}

// Since is how long ago the start was, read from clk; the first call is the start unless it
// was set.
func (s *Start) Since(clk clock.PassiveClock) time.Duration {
	s.once.Do(func() {
		if s.at.IsZero() {
			s.at = clk.Now()
		}
	})
	return clk.Since(s.at)
}

// observe gathers the inputs of Status: the join state, and when joined a probe of the member.
func (r *Reconciler) observe(ctx context.Context, mc *fleetv1alpha1.MemberCluster) (Observation, error) {
	js, cl, err := join(ctx, r.hub, r.clusters, r.opts.HubNamespace, mc)
	if err != nil {
		return Observation{}, err
	}
	obs := Observation{Generation: mc.Generation, HeartbeatTimeout: r.opts.HeartbeatTimeout, Join: js,
		ServeAddresses: mc.Spec.ServeAddresses, CapacityLimits: mc.Spec.CapacityLimits,
		CredentialExpiryWarning: r.opts.CredentialExpiryWarning}
	if js.Joined && r.opts.MintFailures != nil {
		obs.MintFailure = r.opts.MintFailures.MintFailure(mc.Name)
	}
	if js.Joined {
		obs.Report, obs.ReportMissing, obs.ProbeErr = probe(ctx, cl, r.opts.ProbeTimeout)
	}
	// Read the clock after the probe: a probe that timed out took time.
	obs.Now = r.opts.Clock.Now()
	obs.Streak = r.recordProbe(mc.Name, js.Joined, obs.ProbeErr, obs.Now)
	obs.Seen = r.seenHeartbeat(mc.Name)
	obs.Namespaces = r.enforceNamespaces(ctx, cl, mc.Name, obs)
	return obs, nil
}

func (r *Reconciler) recordProbe(name string, probed bool, err error, now time.Time) FailureStreak {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := FailureStreak{}
	if probed {
		s = r.streaks[name].Record(err, now)
	}
	r.streaks[name] = s
	return s
}

func (r *Reconciler) seenHeartbeat(name string) *HeartbeatSeen {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.seen[name]
	if !ok {
		return nil
	}
	return &s
}

func (r *Reconciler) rememberHeartbeat(name string, st *fleetv1alpha1.MemberClusterStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st.LastHeartbeatTime == nil || st.LastHeartbeatObservedTime == nil {
		delete(r.seen, name)
		return
	}
	r.seen[name] = HeartbeatSeen{Heartbeat: st.LastHeartbeatTime.Time, At: st.LastHeartbeatObservedTime.Time}
}

func (r *Reconciler) forget(name string) {
	r.mu.Lock()
	delete(r.streaks, name)
	delete(r.seen, name)
	r.mu.Unlock()
	r.verdicts.forget(name)
	r.metrics.forget(name)
}

// recordTransitions emits one event per condition whose status changed: Normal when it turned
// True, Warning when it turned False; and a Warning when a condition that is not True changes
// its reason, so that a Secret turning refused says so even if the member was not Joined.
func (r *Reconciler) recordTransitions(mc *fleetv1alpha1.MemberCluster, before, after []metav1.Condition) {
	if r.recorder == nil {
		return
	}
	for _, c := range after {
		old := meta.FindStatusCondition(before, c.Type)
		if old != nil && old.Status == c.Status && (c.Status == metav1.ConditionTrue || old.Reason == c.Reason) {
			continue
		}
		eventType := corev1.EventTypeNormal
		if c.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.recorder.Eventf(mc, nil, eventType, c.Reason, "Reconcile", "%s=%s: %s", c.Type, c.Status, c.Message)
	}
}
