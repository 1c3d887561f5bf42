package membership

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/labels"
	sharedmetrics "github.com/rayfleet/rayfleet/shared/metrics"
)

// cacheSyncTimeout bounds the wait for a new member's cache to start, so that one member
// whose start hangs does not hold up the Secrets queue; the failure is retried with backoff.
const cacheSyncTimeout = 30 * time.Second

// ProviderOptions configure a Provider.
type ProviderOptions struct {
	// Namespace holds the members' kubeconfig Secrets.
	Namespace string
	// ClusterOptions are applied to every member's cluster.
	ClusterOptions []cluster.Option
	// RESTOptions are applied to every member's rest.Config after it is built.
	RESTOptions []func(*rest.Config) error
	// TokenTTL is the lifetime of the tokens the hub mints for itself on a member whose
	// kubeconfig holds a ServiceAccount token; 0 means hubaccess.TokenTTL.
	TokenTTL time.Duration
	// Clock decides when a minted token is refreshed; nil means the real clock.
	Clock clock.PassiveClock
	// Registerer receives rayfleet_member_token_refresh_failures_total; nil leaves the counter
	// unregistered.
	Registerer prometheus.Registerer
}

// Provider engages a member for every Secret in its namespace labelled
// fleetv1alpha1.KubeconfigSecretLabel=true, named after the Secret, and disengages it when the
// Secret goes, loses the label or its kubeconfig is refused (hubaccess.RESTConfig: no exec
// plugin, auth provider, file, proxy, impersonation, and a CA). It stands in for
// multicluster-runtime's kubeconfig provider, which builds its clients with clientcmd and so
// would run whatever the Secret says. Disengaging only stops the hub's clients; nothing on the
// member is touched.
// A ServiceAccount token in the kubeconfig is a bootstrap credential: the hub mints
// short-lived tokens for itself with it (memberTokens), and a new token for the same server
// and CA (a re-run `rayfleet join`) replaces it in place, without re-engaging the member.
type Provider struct {
	opts  ProviderOptions
	aware multicluster.Aware
	local client.Reader

	// refreshFailures counts the TokenRequests each member refused.
	refreshFailures *prometheus.CounterVec

	mu       sync.RWMutex
	members  map[multicluster.ClusterName]*engagedMember
	indexers []fieldIndexer
}

// engagedMember is one engaged member: its cluster, what stops it, the hash of the kubeconfig
// it was built from and of everything in it but the bearer token (endpoint), and its token
// source when it has one.
type engagedMember struct {
	cluster  cluster.Cluster
	cancel   context.CancelFunc
	hash     [sha256.Size]byte
	endpoint [sha256.Size]byte
	tokens   *memberTokens
}

// fieldIndexer is an IndexField call, replayed on members engaged later.
type fieldIndexer struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

var (
	_ multicluster.Provider = &Provider{}
	_ MintFailures          = &Provider{}
)

// NewProvider returns a Provider; SetupWithManager starts it.
func NewProvider(opts ProviderOptions) *Provider {
	return &Provider{opts: opts, members: map[multicluster.ClusterName]*engagedMember{},
		refreshFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rayfleet_member_token_refresh_failures_total",
			Help: "TokenRequests the member refused the hub (at most one a minute per member); the member's CredentialsValid condition quotes the last refusal.",
		}, []string{"member"})}
}

// SetupWithManager watches the Secrets of the provider's namespace with mgr's local manager
// and engages members with mgr.
func (p *Provider) SetupWithManager(_ context.Context, mgr mcmanager.Manager) error {
	local := mgr.GetLocalManager()
	p.aware, p.local = mgr, local.GetClient()
	if p.opts.Registerer != nil {
		c, err := sharedmetrics.RegisterOrReuse(p.opts.Registerer, p.refreshFailures, "the member token metrics")
		if err != nil {
			return err
		}
		p.refreshFailures = c
	}
	ns := p.opts.Namespace
	// Every Secret of the namespace, labelled or not: one that loses its label must be
	// disengaged, and the update that removes the label carries none.
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == ns })
	err := ctrl.NewControllerManagedBy(local).
		Named("member-kubeconfig").
		For(&corev1.Secret{}, builder.WithPredicates(inNamespace)).
		Complete(p)
	if err != nil {
		return fmt.Errorf("setting up the member kubeconfig provider: %w", err)
	}
	return nil
}

// Reconcile engages, re-engages or disengages the member named after one Secret.
func (p *Provider) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	name := multicluster.ClusterName(req.Name)
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", req.Name)
	var secret corev1.Secret
	if err := p.local.Get(ctx, req.NamespacedName, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			p.disengage(name)
			p.refreshFailures.DeleteLabelValues(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading kubeconfig Secret %s: %w", req.NamespacedName, err)
	}
	data := secret.Data[fleetv1alpha1.DefaultKubeconfigKey]
	if secret.DeletionTimestamp != nil || secret.Labels[fleetv1alpha1.KubeconfigSecretLabel] != labels.True || len(data) == 0 {
		p.disengage(name)
		return ctrl.Result{}, nil
	}
	hash := sha256.Sum256(data)
	m := p.member(name)
	if m != nil && m.hash == hash {
		return ctrl.Result{}, nil
	}
	cfg, err := hubaccess.RESTConfig(data)
	if err != nil {
		// Whatever the new kubeconfig holds, the old one no longer speaks for the member.
		p.disengage(name)
		// The MemberCluster's Joined condition says why; retrying cannot help until the
		// Secret changes, which reconciles again.
		log.Info("Not engaging member: its kubeconfig is refused", "secret", req.NamespacedName, "reason", err.Error())
		return ctrl.Result{}, nil
	}
	if p.rotate(name, m, cfg, hash) {
		log.Info("Rotated the member's bootstrap token in place", "secret", req.NamespacedName)
		return ctrl.Result{}, nil
	}
	p.disengage(name)
	if err := p.engage(ctx, name, cfg, hash); err != nil {
		return ctrl.Result{}, fmt.Errorf("engaging member %s: %w", name, err)
	}
	log.Info("Engaged member", "secret", req.NamespacedName)
	return ctrl.Result{}, nil
}

// rotate gives the engaged member m the bearer token of cfg as its new bootstrap token, when
// only that token changed, and reports whether it did: the member's clients and caches keep
// running, so it neither flaps Reachable nor rebuilds its caches.
func (p *Provider) rotate(name multicluster.ClusterName, m *engagedMember, cfg *rest.Config, hash [sha256.Size]byte) bool {
	if m == nil || m.tokens == nil || cfg.BearerToken == "" || endpointOf(cfg) != m.endpoint {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.members[name] != m {
		return false
	}
	m.tokens.SetBootstrap(cfg.BearerToken)
	m.hash = hash
	return true
}

// endpointOf hashes what a member's transport is built from: all of cfg but the bearer token.
func endpointOf(cfg *rest.Config) [sha256.Size]byte {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(cfg.Host), []byte(cfg.ServerName), cfg.CAData, cfg.CertData, cfg.KeyData,
		[]byte(strconv.FormatBool(cfg.DisableCompression))} {
		// Length-prefixed, so that no two configs hash alike by moving bytes between fields.
		h.Write([]byte(strconv.Itoa(len(part)) + ":"))
		h.Write(part)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// engage starts a cluster for the member and hands it to the manager.
func (p *Provider) engage(ctx context.Context, name multicluster.ClusterName, cfg *rest.Config, hash [sha256.Size]byte) error {
	endpoint := endpointOf(cfg)
	for _, opt := range p.opts.RESTOptions {
		if err := opt(cfg); err != nil {
			return fmt.Errorf("applying a REST option: %w", err)
		}
	}
	var tokens *memberTokens
	if cfg.BearerToken != "" {
		base := rest.CopyConfig(cfg)
		base.BearerToken = ""
		failures := p.refreshFailures.WithLabelValues(string(name))
		tokens = newMemberTokens(string(name), cfg.BearerToken, mintWith(base), p.clock(), p.tokenTTL(), failures.Inc)
		// The token comes from the source on every request; a BearerToken would override it.
		cfg.BearerToken = ""
		cfg.Wrap(transport.ResettableTokenSourceWrapTransport(tokens))
	}
	cl, err := cluster.New(cfg, p.opts.ClusterOptions...)
	if err != nil {
		return fmt.Errorf("creating the cluster: %w", err)
	}
	// The reconcile's context lasts as long as the controller (no reconcile timeout is set),
	// so the member stops with the hub or when disengaged, whichever comes first.
	memberCtx, cancel := context.WithCancel(ctx)
	indexed, err := p.applyIndexers(memberCtx, cl, 0)
	if err != nil {
		cancel()
		return err
	}
	go func() {
		if err := cl.Start(memberCtx); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Member cluster stopped", "cluster", name)
		}
	}()
	syncCtx, syncCancel := context.WithTimeout(memberCtx, cacheSyncTimeout)
	defer syncCancel()
	if !cl.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		return errors.New("the member's cache did not start")
	}
	p.mu.Lock()
	// Indexes asked for while the cache started, then the member, under one lock, so that
	// no IndexField call misses it.
	if _, err := p.applyIndexersLocked(memberCtx, cl, indexed); err != nil {
		p.mu.Unlock()
		cancel()
		return err
	}
	p.members[name] = &engagedMember{cluster: cl, cancel: cancel, hash: hash, endpoint: endpoint, tokens: tokens}
	p.mu.Unlock()
	if err := p.aware.Engage(memberCtx, name, cl); err != nil {
		p.mu.Lock()
		delete(p.members, name)
		p.mu.Unlock()
		cancel()
		return fmt.Errorf("engaging with the manager: %w", err)
	}
	return nil
}

func (p *Provider) clock() clock.PassiveClock {
	if p.opts.Clock != nil {
		return p.opts.Clock
	}
	return clock.RealClock{}
}

func (p *Provider) tokenTTL() time.Duration {
	if p.opts.TokenTTL > 0 {
		return p.opts.TokenTTL
	}
	return hubaccess.TokenTTL
}

func (p *Provider) member(name multicluster.ClusterName) *engagedMember {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.members[name]
}

// disengage stops the member's cluster, if engaged; the manager drops it when its context ends.
func (p *Provider) disengage(name multicluster.ClusterName) {
	p.mu.Lock()
	m := p.members[name]
	delete(p.members, name)
	p.mu.Unlock()
	if m != nil {
		m.cancel()
	}
}

// MintFailure returns the TokenRequest refusal the engaged member's token source is in; nil
// when there is none or the member is not engaged.
func (p *Provider) MintFailure(member string) *MintFailure {
	m := p.member(multicluster.ClusterName(member))
	if m == nil || m.tokens == nil {
		return nil
	}
	return m.tokens.MintFailure()
}

// Get returns the engaged member named name, or multicluster.ErrClusterNotFound.
func (p *Provider) Get(_ context.Context, name multicluster.ClusterName) (cluster.Cluster, error) {
	if m := p.member(name); m != nil {
		return m.cluster, nil
	}
	return nil, multicluster.ErrClusterNotFound
}

// IndexField indexes field on every engaged member and on those engaged later.
func (p *Provider) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.indexers = append(p.indexers, fieldIndexer{obj: obj, field: field, extract: extract})
	var errs []error
	for name, m := range p.members {
		if err := m.cluster.GetFieldIndexer().IndexField(ctx, obj, field, extract); err != nil {
			errs = append(errs, fmt.Errorf("indexing %s on member %s: %w", field, name, err))
		}
	}
	return errors.Join(errs...)
}

// applyIndexers applies the indexers from the from-th on to cl and returns how many there are.
func (p *Provider) applyIndexers(ctx context.Context, cl cluster.Cluster, from int) (int, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.applyIndexersLocked(ctx, cl, from)
}

func (p *Provider) applyIndexersLocked(ctx context.Context, cl cluster.Cluster, from int) (int, error) {
	for _, ix := range p.indexers[from:] {
		if err := cl.GetFieldIndexer().IndexField(ctx, ix.obj, ix.field, ix.extract); err != nil {
			return 0, fmt.Errorf("indexing %s: %w", ix.field, err)
		}
	}
	return len(p.indexers), nil
}
