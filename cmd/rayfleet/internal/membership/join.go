package membership

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// Defaults of JoinOptions.
const (
	// DefaultTokenTimeout bounds the wait for the token controller: it fills a new token
	// Secret within a second or two, so a minute means it is not running.
	DefaultTokenTimeout = time.Minute
	// DefaultPollInterval is how often the token Secret is read while waiting.
	DefaultPollInterval = 500 * time.Millisecond
)

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
	// TokenTimeout bounds the wait for the member's token controller; 0 means
	// DefaultTokenTimeout.
	TokenTimeout time.Duration
	// PollInterval is how often the token Secret is read; 0 means DefaultPollInterval.
	PollInterval time.Duration
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
}

// JoinResult is what join set up, without the token.
type JoinResult struct {
	// Server is the member API server URL in the hub's kubeconfig.
	Server string
	// Secret is the hub's kubeconfig Secret.
	Secret client.ObjectKey
	// Existing is the token Secret of a hub identity join found on the member and used as is
	// (normally installed by the spoke chart); nil when join applied its own.
	Existing *ObjectRef
	// TrafficRoles are the Roles (or the ClusterRole) of the hub's traffic rights, one per
	// JoinOptions.TrafficNamespaces: join's, or one it found there and used as is (the spoke
	// chart's).
	TrafficRoles []ObjectRef
}

// Join gives the hub an identity on the member and registers the member on the hub. A hub
// identity already on the member that join did not create (the spoke chart's) is used as is,
// with whatever guard the chart installed; otherwise join applies its own, guarded by
// shared/hubpolicy's defaults. Every write is a server-side apply, so running it again
// updates a member (a new server URL, say) rather than failing.
func Join(ctx context.Context, hub, member Cluster, o JoinOptions) (*JoinResult, error) {
	if o.Name == "" || o.HubNamespace == "" {
		return nil, errors.New("joining: a member name and a hub namespace are required")
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
	existing, err := existingIdentity(ctx, member.Client, namespace)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", o.Name, err)
	}
	traffic, trafficRoles, err := o.planTraffic(ctx, member.Client, namespace, existing)
	if err != nil {
		return nil, fmt.Errorf("member %s: %w", o.Name, err)
	}
	if existing == nil {
		objs, objsErr := memberObjects(namespace, o.AllowNodePorts)
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
	token, err := waitForToken(ctx, member.Client, namespace, o.tokenTimeout(), o.pollInterval())
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
	return &JoinResult{Server: server, Secret: client.ObjectKey{Namespace: o.HubNamespace, Name: o.Name},
		Existing: existing, TrafficRoles: trafficRoles}, nil
}

// planTraffic returns the traffic Roles and RoleBindings (or the ClusterRole and binding) to
// apply for the hub's ServiceAccount in namespace (the one the spoke chart's token names, when
// the chart made the identity), and the Roles found in their place; nothing without traffic
// namespaces.
func (o JoinOptions) planTraffic(ctx context.Context, c client.Client, namespace string, existing *ObjectRef) ([]client.Object, []ObjectRef, error) {
	if len(o.TrafficNamespaces) == 0 && !o.TrafficAllNamespaces {
		return nil, nil, nil
	}
	sa := ServiceAccountName
	if existing != nil {
		var err error
		if sa, err = tokenServiceAccount(ctx, c, namespace); err != nil {
			return nil, nil, err
		}
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

func (o JoinOptions) memberNamespace() string {
	if o.MemberNamespace != "" {
		return o.MemberNamespace
	}
	return DefaultMemberNamespace
}

func (o JoinOptions) tokenTimeout() time.Duration {
	if o.TokenTimeout > 0 {
		return o.TokenTimeout
	}
	return DefaultTokenTimeout
}

func (o JoinOptions) pollInterval() time.Duration {
	if o.PollInterval > 0 {
		return o.PollInterval
	}
	return DefaultPollInterval
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

// waitForToken reads the token Secret until the token controller has filled it.
func waitForToken(ctx context.Context, c client.Client, namespace string, timeout, interval time.Duration) ([]byte, error) {
	key := client.ObjectKey{Namespace: namespace, Name: TokenSecretName}
	var token []byte
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		var s corev1.Secret
		if err := c.Get(ctx, key, &s); err != nil {
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return false, fmt.Errorf("reading Secret %s: %w", key, err)
		}
		token = s.Data[corev1.ServiceAccountTokenKey]
		return len(token) > 0, nil
	})
	if wait.Interrupted(err) {
		return nil, fmt.Errorf("the token controller did not fill Secret %s within %s; is kube-controller-manager running on the member? (%w)", key, timeout, err)
	}
	if err != nil {
		return nil, err
	}
	return token, nil
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
