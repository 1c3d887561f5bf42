package membership

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/hubpolicy"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// DefaultBootstrapTokenTTL is the lifetime of the token join writes into the hub's kubeconfig
// (hubaccess.DefaultBootstrapTokenTTL).
const DefaultBootstrapTokenTTL = hubaccess.DefaultBootstrapTokenTTL

// MinBootstrapTokenTTL is the shortest lifetime Kubernetes grants a requested token.
const MinBootstrapTokenTTL = hubaccess.MinTokenTTL

// hubUser names the credentials in the generated kubeconfig.
const hubUser = "rayfleet-hub"

// Cluster is one API server join talks to.
type Cluster struct {
	// Client writes to the cluster; its scheme must know the built-in and fleet kinds.
	Client client.Client
	// Config is what Client was built from; on the member its server and CA go into the hub's
	// kubeconfig.
	Config *rest.Config
}

// JoinOptions says which member joins which hub.
type JoinOptions struct {
	// Name of the MemberCluster, and of its kubeconfig Secret in HubNamespace.
	Name string
	// HubNamespace holds the kubeconfig Secrets the hub engages.
	HubNamespace string
	// MemberNamespace holds the hub's ServiceAccount and token on the member: the spoke
	// chart's release namespace when the chart installed them. Empty means
	// DefaultMemberNamespace.
	MemberNamespace string
	// MemberServer is the member API server URL the hub uses; empty means the member
	// context's, which is wrong when the hub sees the member under another address.
	MemberServer string
	// BootstrapTokenTTL is the lifetime of the bound token join requests for the hub's
	// ServiceAccount and writes into its kubeconfig; 0 means DefaultBootstrapTokenTTL. The hub
	// mints its own short-lived tokens with it, so it is needed again only when the hub
	// restarts; re-running join replaces it.
	BootstrapTokenTTL time.Duration
	// TrafficNamespaces are namespaces of the member (which must exist) where the hub gets the
	// Role and RoleBinding TrafficRoleName: hubaccess.TrafficRules for the hub's
	// ServiceAccount. A PlacementPolicy routing through a Gateway on the member writes the
	// route in its RayService's namespace, so these are the RayServices' namespaces.
	TrafficNamespaces []string
	// TrafficAllNamespaces grants those rights in every namespace instead, through the
	// ClusterRole and ClusterRoleBinding TrafficRoleName: an explicit opt-in.
	TrafficAllNamespaces bool
	// AllowNodePorts lets the hub create RayServices whose Services are of type NodePort or
	// LoadBalancer (hubpolicy.Config.AllowNodePorts in the guard join applies), which routing
	// traffic to the member through its serve Service needs. It changes nothing when join uses
	// a hub identity it found (the spoke chart's hubPolicy.allowNodePorts decides there).
	AllowNodePorts bool
	// HubName is the hub's --hub-name, the labels.OriginHub value on its copies; empty means
	// labels.DefaultHubName. The namespaces holding its copies without labels.HubNamespace are
	// labelled allowed, before the guard that requires the label is applied.
	HubName string
	// GuardTimeout bounds the wait, before anything is written on the hub, until the member's
	// API server enforces the guard on the hub's identity (it loads policies asynchronously);
	// 0 means DefaultGuardTimeout.
	GuardTimeout time.Duration
	// Clock paces that wait; nil means the real clock.
	Clock clock.Clock
}

// JoinResult is what join set up, without the token.
type JoinResult struct {
	// Server is the member API server URL in the hub's kubeconfig.
	Server string
	// Secret is the hub's kubeconfig Secret.
	Secret client.ObjectKey
	// Existing is the ClusterRoleBinding of a hub identity join found on the member and used
	// as is (normally installed by the spoke chart); nil when join applied its own.
	Existing *ObjectRef
	// TokenExpires is when the bootstrap token in the hub's kubeconfig expires.
	TokenExpires time.Time
	// TrafficRoles are the Roles (or the ClusterRole) of the hub's traffic rights, one per
	// JoinOptions.TrafficNamespaces: join's, or one it found there and used as is (the spoke
	// chart's).
	TrafficRoles []ObjectRef
	// Adopted are the namespaces holding the hub's copies that join labelled
	// labels.HubNamespace=allowed, because they lacked the label.
	Adopted []string
	// Guard is what join found out about the guard being in force.
	Guard GuardCheck
}

// Join gives the hub an identity on the member and registers the member on the hub. A hub
// identity already on the member that join did not create (the spoke chart's) is used as is,
// with whatever guard the chart installed; otherwise join applies its own, guarded by
// shared/hubpolicy's defaults. The hub's kubeconfig holds a bound token of the identity's
// ServiceAccount (TokenRequest, BootstrapTokenTTL), so running join again rotates it; the hub
// takes the new token without re-engaging the member. It requests the token and writes on the
// hub only once the member's API server enforces the guard (waitForGuard), which it loads
// asynchronously. Every write is a server-side apply, so
// running it again updates a member (a new server URL, say) rather than failing.
func Join(ctx context.Context, hub, member Cluster, o JoinOptions) (*JoinResult, error) {
	if o.Name == "" || o.HubNamespace == "" {
		return nil, errors.New("joining: a member name and a hub namespace are required")
	}
	if o.BootstrapTokenTTL != 0 && o.BootstrapTokenTTL < MinBootstrapTokenTTL {
		return nil, fmt.Errorf("joining: the bootstrap token's lifetime %s is below Kubernetes' minimum of %s", o.BootstrapTokenTTL, MinBootstrapTokenTTL)
	}
	server := o.MemberServer
	if server == "" {
		server = member.Config.Host
	}
	// The hub refuses a kubeconfig without a CA, skipping TLS verification or not over
	// https: find out before anything is written on either cluster. No token exists yet;
	// a stand-in takes its place.
	if _, err := hubKubeconfig(o.Name, server, member.Config, []byte("token-stand-in")); err != nil {
		return nil, fmt.Errorf("member %s: %w", o.Name, err)
	}
	namespace := o.memberNamespace()
	existing, sa, err := existingIdentity(ctx, member.Client, namespace)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", o.Name, err)
	}
	if existing == nil {
		sa = ServiceAccountName
	}
	traffic, trafficRoles, err := o.planTraffic(ctx, member.Client, namespace, sa)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", o.Name, err)
	}
	// Before a guard that requires the label applies (join's below, or a chart's just
	// upgraded), the namespaces an earlier hub created keep taking its writes.
	hubName := o.HubName
	if hubName == "" {
		hubName = labels.DefaultHubName
	}
	adopted, err := adoptNamespaces(ctx, member.Client, hubName)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", o.Name, err)
	}
	if existing == nil {
		objs, objsErr := memberObjects(namespace, o.AllowNodePorts, o.TrafficNamespaces)
		if objsErr != nil {
			return nil, fmt.Errorf("member %s: %w", o.Name, objsErr)
		}
		for _, obj := range objs {
			if applyErr := apply(ctx, member.Client, obj); applyErr != nil {
				return nil, fmt.Errorf("member %s: %w", o.Name, applyErr)
			}
		}
	}
	for _, obj := range traffic {
		if applyErr := apply(ctx, member.Client, obj); applyErr != nil {
			return nil, fmt.Errorf("member %s: %w", o.Name, applyErr)
		}
	}
	for _, obj := range traffic {
		if kind := refOf(member.Client, obj).Kind; kind == "Role" || kind == "ClusterRole" {
			trafficRoles = append(trafficRoles, refOf(member.Client, obj))
		}
	}
	// No token of the hub exists, and nothing is written on the hub, before the guard is in force.
	guard, err := o.waitForGuard(ctx, member, namespace, sa)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", o.Name, err)
	}
	token, expires, err := requestToken(ctx, member.Client, client.ObjectKey{Namespace: namespace, Name: sa}, o.bootstrapTokenTTL())
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", o.Name, err)
	}
	kubeconfig, err := hubKubeconfig(o.Name, server, member.Config, token)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", o.Name, err)
	}
	for _, obj := range hubObjects(o.Name, o.HubNamespace, kubeconfig) {
		if err := apply(ctx, hub.Client, obj); err != nil {
			return nil, fmt.Errorf("hub: registering member %s: %w", o.Name, err)
		}
	}
	// Once the hub holds the bound token, the never-expiring one an older join made goes.
	if _, err := deleteIfOwned(ctx, member.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: LegacyTokenSecretName, Namespace: namespace}}); err != nil {
		return nil, fmt.Errorf("member %s: removing the legacy token: %w", o.Name, err)
	}
	return &JoinResult{Server: server, Secret: client.ObjectKey{Namespace: o.HubNamespace, Name: o.Name},
		Existing: existing, TokenExpires: expires, TrafficRoles: trafficRoles, Adopted: adopted, Guard: guard}, nil
}

// planTraffic returns the traffic Roles and RoleBindings (or the ClusterRole and binding) to
// apply for the hub's ServiceAccount sa in namespace (the one the spoke chart binds, when the
// chart made the identity), and the Roles found in their place; nothing without traffic
// namespaces.
func (o JoinOptions) planTraffic(ctx context.Context, c client.Client, namespace, sa string) ([]client.Object, []ObjectRef, error) {
	if len(o.TrafficNamespaces) == 0 && !o.TrafficAllNamespaces {
		return nil, nil, nil
	}
	if o.TrafficAllNamespaces {
		return planTrafficObjects(ctx, c, trafficClusterObjects(namespace, sa))
	}
	var objs []client.Object
	var found []ObjectRef
	for _, ns := range slices.Compact(slices.Sorted(slices.Values(o.TrafficNamespaces))) {
		nsObjs, nsFound, err := planTraffic(ctx, c, ns, namespace, sa)
		if err != nil {
			return nil, nil, err
		}
		objs = append(objs, nsObjs...)
		found = append(found, nsFound...)
	}
	return objs, found, nil
}

// waitForGuard waits until the member enforces the guard on the hub's ServiceAccount sa in
// namespace, checking with dry runs made as the hub.
func (o JoinOptions) waitForGuard(ctx context.Context, member Cluster, namespace, sa string) (GuardCheck, error) {
	w := guardWait{namespace: namespace, username: hubpolicy.HubUsername(namespace, sa), timeout: o.GuardTimeout, clock: o.Clock}
	if w.timeout <= 0 {
		w.timeout = DefaultGuardTimeout
	}
	if w.clock == nil {
		w.clock = clock.RealClock{}
	}
	asHub, err := impersonating(member, w.username)
	if err != nil {
		return GuardCheck{}, err
	}
	return waitForGuard(ctx, member.Client, asHub, w)
}

func (o JoinOptions) memberNamespace() string {
	if o.MemberNamespace != "" {
		return o.MemberNamespace
	}
	return DefaultMemberNamespace
}

func (o JoinOptions) bootstrapTokenTTL() time.Duration {
	if o.BootstrapTokenTTL > 0 {
		return o.BootstrapTokenTTL
	}
	return DefaultBootstrapTokenTTL
}

// hubObjects register a member on the hub: its namespace, the kubeconfig Secret labelled for
// the provider, and the MemberCluster naming that Secret.
func hubObjects(name, namespace string, kubeconfig []byte) []client.Object {
	managed := map[string]string{ManagedByLabel: ManagedByValue}
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: managed}},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name:      name,
				Namespace: namespace,
				Labels:    map[string]string{ManagedByLabel: ManagedByValue, fleetv1alpha1.KubeconfigSecretLabel: labels.True},
			},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{fleetv1alpha1.DefaultKubeconfigKey: kubeconfig},
		},
		&fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: managed},
			Spec: fleetv1alpha1.MemberClusterSpec{
				KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretRef{Name: name, Key: fleetv1alpha1.DefaultKubeconfigKey},
			},
		},
	}
}

// requestToken asks the member for a bound token of the ServiceAccount sa lasting ttl
// (TokenRequest): it expires, and deleting the ServiceAccount revokes it.
func requestToken(ctx context.Context, c client.Client, sa client.ObjectKey, ttl time.Duration) ([]byte, time.Time, error) {
	seconds := int64(ttl / time.Second)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa.Name, Namespace: sa.Namespace}}
	if err := c.SubResource("token").Create(ctx, account, req); err != nil {
		return nil, time.Time{}, fmt.Errorf("requesting a token for ServiceAccount %s: %w", sa, err)
	}
	if req.Status.Token == "" {
		return nil, time.Time{}, fmt.Errorf("the token requested for ServiceAccount %s is empty", sa)
	}
	return []byte(req.Status.Token), req.Status.ExpirationTimestamp.Time, nil
}

// hubKubeconfig is the kubeconfig the hub reaches the member with: the server, the member
// context's trust settings and the hub ServiceAccount's token, all inline. It fails with the
// field the hub would refuse (hubaccess.RESTConfig), such as a member context that skips TLS
// verification or has no CA.
func hubKubeconfig(name, server string, member *rest.Config, token []byte) ([]byte, error) {
	ca := member.CAData
	if len(ca) == 0 && member.CAFile != "" {
		data, err := os.ReadFile(member.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading the member's CA file: %w", err)
		}
		ca = data
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: ca,
		InsecureSkipTLSVerify:    member.Insecure,
		TLSServerName:            member.ServerName,
	}
	cfg.AuthInfos[hubUser] = &clientcmdapi.AuthInfo{Token: string(token)}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: hubUser}
	cfg.CurrentContext = name
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, fmt.Errorf("writing the hub's kubeconfig: %w", err)
	}
	if _, err := hubaccess.RESTConfig(data); err != nil {
		return nil, fmt.Errorf("the hub would refuse the kubeconfig made from the member context's server and trust settings "+
			"(--member-server sets the server; the context needs its CA, not insecure-skip-tls-verify): %w", err)
	}
	return data, nil
}
