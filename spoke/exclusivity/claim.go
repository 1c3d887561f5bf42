package exclusivity

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The Claimer reads Leases of every namespace with two filtered lists per round (never a Lease
// informer: every Node's heartbeat is a Lease) and writes only its own claim.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;create;update

// Defaults of the Claimer's timing.
const (
	// DefaultInterval is how often the Claimer renews its claim and looks at the Leases: a
	// KubeRay operator that starts is noticed within this (plus a reconcile's requeue).
	DefaultInterval = 5 * time.Second
	// DefaultLeaseDuration is how long a claim holds without renewal: three missed renewals.
	DefaultLeaseDuration = 15 * time.Second
)

// releaseTimeout bounds the claim's release when the spoke stops.
const releaseTimeout = 5 * time.Second

// ClaimerOptions configure a Claimer.
type ClaimerOptions struct {
	// Identity is this spoke installation.
	Identity Identity
	// Client writes the claim Lease; Reader reads Leases from the API server (the manager's
	// API reader: the spoke caches no Leases).
	Client client.Client
	Reader client.Reader
	// Gate receives the decisions.
	Gate *Gate
	// Clock times the claim and the rounds; nil means the real clock.
	Clock clock.WithTicker
	// Interval is the time between rounds; zero means DefaultInterval.
	Interval time.Duration
	// LeaseDuration is how long the claim, and a decision, hold; zero means
	// DefaultLeaseDuration.
	LeaseDuration time.Duration
}

// Claimer keeps this spoke's claim on the member and, every interval, decides from the Leases
// whether another controller is active. It is a manager.Runnable run on the leader only, like
// the reconcilers it gates.
type Claimer struct {
	opts ClaimerOptions
	// acquired is when this spoke's current claim was acquired; zero while it holds none.
	acquired time.Time
	// last is the previous round's decision, to log changes only.
	last *Decision
}

// NewClaimer returns a Claimer; add it to the manager with mgr.Add.
func NewClaimer(opts ClaimerOptions) (*Claimer, error) {
	if opts.Identity.Namespace == "" || opts.Identity.Name == "" {
		return nil, fmt.Errorf("the spoke's claim needs a namespace and a name, got %q", opts.Identity.Holder())
	}
	if opts.Client == nil || opts.Reader == nil || opts.Gate == nil {
		return nil, fmt.Errorf("the claimer of %s needs a client, a reader and a gate", opts.Identity.Holder())
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.LeaseDuration <= 0 {
		opts.LeaseDuration = DefaultLeaseDuration
	}
	return &Claimer{opts: opts}, nil
}

// NeedLeaderElection runs the Claimer on the leader only: one claim per installation.
func (c *Claimer) NeedLeaderElection() bool { return true }

// Start runs a round at once, then every interval, until ctx ends; then it releases the claim so
// that a spoke waiting for it takes over at once.
func (c *Claimer) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("exclusivity")
	ctx = ctrl.LoggerInto(ctx, log)
	ticker := c.opts.Clock.NewTicker(c.opts.Interval)
	defer ticker.Stop()
	for {
		if err := c.Sync(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "looking for another controller failed; retrying", "interval", c.opts.Interval)
		}
		select {
		case <-ctx.Done():
			releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			defer cancel()
			if err := c.release(releaseCtx); err != nil {
				log.Error(err, "releasing the spoke's claim failed; it lapses on its own",
					"leaseDuration", c.opts.LeaseDuration)
			}
			return nil
		case <-ticker.C():
		}
	}
}

// Problem is the gate's problem for this spoke's namespaces (see Gate.Problem).
func (c *Claimer) Problem() (Problem, bool) {
	return c.opts.Gate.Problem(c.opts.Identity.WatchNamespaces)
}

// Sync runs one round: it renews (or takes, or finds taken) the claim, reads KubeRay's and the
// other spokes' Leases and hands the decision to the gate. On error the gate keeps its last
// decision until it expires.
func (c *Claimer) Sync(ctx context.Context) error {
	now := c.opts.Clock.Now()
	if err := c.claim(ctx, now); err != nil {
		c.opts.Gate.Fail(err)
		return err
	}
	leases, err := c.listLeases(ctx)
	if err != nil {
		c.opts.Gate.Fail(err)
		return err
	}
	d := Decide(Observation{Now: now, Self: c.opts.Identity, SelfAcquired: c.acquired, Leases: leases})
	c.opts.Gate.Set(d, now.Add(c.opts.LeaseDuration))
	c.logChange(ctx, d)
	return nil
}

// listLeases reads KubeRay's leader-election Leases and the spokes' claims of every namespace.
func (c *Claimer) listLeases(ctx context.Context) ([]coordinationv1.Lease, error) {
	var kubeRay, claims coordinationv1.LeaseList
	if err := c.opts.Reader.List(ctx, &kubeRay, client.MatchingFields{"metadata.name": KubeRayLeaseName}); err != nil {
		return nil, fmt.Errorf("listing Leases %s of every namespace: %w", KubeRayLeaseName, err)
	}
	if err := c.opts.Reader.List(ctx, &claims, client.MatchingLabels{ClaimLabel: ClaimLabelValue}); err != nil {
		return nil, fmt.Errorf("listing the spokes' claim Leases (%s=%s): %w", ClaimLabel, ClaimLabelValue, err)
	}
	return append(kubeRay.Items, claims.Items...), nil
}

// claim creates, renews or takes over this spoke's claim Lease. A claim held by another
// installation of the namespace and still live is left alone (c.acquired becomes zero, and
// Decide gives way to it).
func (c *Claimer) claim(ctx context.Context, now time.Time) error {
	key := client.ObjectKey{Namespace: c.opts.Identity.Namespace, Name: ClaimLeaseName}
	self := c.opts.Identity.Holder()
	var lease coordinationv1.Lease
	err := c.opts.Reader.Get(ctx, key, &lease)
	if apierrors.IsNotFound(err) {
		lease = coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		c.fill(&lease, now, now)
		if err = c.opts.Client.Create(ctx, &lease); err != nil {
			c.acquired = time.Time{}
			return fmt.Errorf("creating the claim Lease %s: %w", key, err)
		}
		c.acquired = now
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the claim Lease %s: %w", key, err)
	}
	holder := ptrValue(lease.Spec.HolderIdentity)
	live := Live(&lease, now)
	acquired := now
	switch {
	case holder != self && live:
		c.acquired = time.Time{}
		return nil
	case holder == self && live && lease.Spec.AcquireTime != nil:
		// A renewal, possibly by a new leader of this installation: the claim keeps its age.
		acquired = lease.Spec.AcquireTime.Time
	}
	c.fill(&lease, acquired, now)
	if err := c.opts.Client.Update(ctx, &lease); err != nil {
		c.acquired = time.Time{}
		return fmt.Errorf("renewing the claim Lease %s: %w", key, err)
	}
	c.acquired = acquired
	return nil
}

// fill writes this spoke's claim into lease.
func (c *Claimer) fill(lease *coordinationv1.Lease, acquired, now time.Time) {
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[ClaimLabel] = ClaimLabelValue
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[WatchNamespacesAnnotation] = strings.Join(c.opts.Identity.WatchNamespaces, ",")
	lease.Spec.HolderIdentity = ptr.To(c.opts.Identity.Holder())
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(c.opts.LeaseDuration / time.Second))
	lease.Spec.AcquireTime = &metav1.MicroTime{Time: acquired}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: now}
}

// release gives the claim up if this spoke holds it, so that a spoke giving way to it resumes at
// its next round instead of after the lease duration.
func (c *Claimer) release(ctx context.Context) error {
	if c.acquired.IsZero() {
		return nil
	}
	key := client.ObjectKey{Namespace: c.opts.Identity.Namespace, Name: ClaimLeaseName}
	var lease coordinationv1.Lease
	if err := c.opts.Reader.Get(ctx, key, &lease); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("reading the claim Lease %s: %w", key, err))
	}
	if ptrValue(lease.Spec.HolderIdentity) != c.opts.Identity.Holder() {
		return nil
	}
	lease.Spec.HolderIdentity = ptr.To("")
	if err := c.opts.Client.Update(ctx, &lease); err != nil {
		return fmt.Errorf("releasing the claim Lease %s: %w", key, err)
	}
	c.acquired = time.Time{}
	return nil
}

// logChange logs the decision when it differs from the previous round's.
func (c *Claimer) logChange(ctx context.Context, d Decision) {
	if c.last != nil && slices.EqualFunc(c.last.Conflicts, d.Conflicts, sameConflict) &&
		slices.EqualFunc(c.last.Outranked, d.Outranked, sameHolder) {
		return
	}
	log := ctrl.LoggerFrom(ctx)
	for _, o := range d.Outranked {
		log.Info("Another RayFleet spoke is installed on this cluster and gives way to this one; uninstall one of the two",
			"otherSpoke", o.Identity, "claimLease", o.Lease.String(), "namespaces", describeNamespaces(o.Namespaces))
	}
	switch {
	case len(d.Conflicts) > 0:
		for _, cf := range d.Conflicts {
			log.Info("Another controller is active; the spoke leaves the ray.io objects it reconciles alone",
				"reason", cf.Reason, "message", cf.Message())
		}
	case c.last != nil && len(c.last.Conflicts) > 0:
		log.Info("No other controller is active any more; the spoke reconciles again")
	case c.last == nil:
		log.Info("No other controller is active; the spoke holds its claim", "claimLease",
			c.opts.Identity.Namespace+"/"+ClaimLeaseName, "holder", c.opts.Identity.Holder())
	}
	c.last = &d
}

func sameConflict(a, b Conflict) bool { return a.Reason == b.Reason && sameHolder(a.Holder, b.Holder) }

func sameHolder(a, b Holder) bool {
	return a.Kind == b.Kind && a.Lease == b.Lease && a.Identity == b.Identity && slices.Equal(a.Namespaces, b.Namespaces)
}
