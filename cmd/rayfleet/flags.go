package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/membership"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// clusterFlags select one cluster from a kubeconfig; empty fields mean kubectl's defaults
// ($KUBECONFIG or ~/.kube/config, its current context).
type clusterFlags struct {
	kubeconfig string
	context    string
}

// given says whether either flag was set.
func (c clusterFlags) given() bool { return c.kubeconfig != "" || c.context != "" }

func (c *clusterFlags) register(fs *pflag.FlagSet, prefix, what string) {
	fs.StringVar(&c.kubeconfig, prefix+"-kubeconfig", "", "kubeconfig file of the "+what+" (default $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&c.context, prefix+"-context", "", "kubeconfig context of the "+what+" (default the current context)")
}

// joinArgs are the flags of `rayfleet join`.
type joinArgs struct {
	hub, member     clusterFlags
	name            string
	hubNamespace    string
	memberNamespace string
	memberServer    string
	// bootstrapTokenTTL is the lifetime of the token written into the hub's kubeconfig.
	bootstrapTokenTTL time.Duration
	// trafficNamespaces are where the hub gets its traffic Roles; none by default.
	trafficNamespaces stringList
	// trafficAllNamespaces grants the traffic rights in every namespace instead.
	trafficAllNamespaces bool
	// allowNodePorts loosens join's guard to let the hub's RayServices have NodePort and
	// LoadBalancer Services.
	allowNodePorts bool
	// hubName is the hub's --hub-name, on its copies.
	hubName string
	// guardTimeout bounds the wait for the member to enforce the guard.
	guardTimeout time.Duration
}

// unjoinArgs are the flags of `rayfleet unjoin`.
type unjoinArgs struct {
	hub, member     clusterFlags
	name            string
	hubNamespace    string
	memberNamespace string
}

// statusArgs are the flags of `rayfleet status`.
type statusArgs struct {
	hub           clusterFlags
	namespace     string
	allNamespaces bool
	// output is -o's format; empty prints the tables.
	output string
}

const joinLong = `Joins a member cluster to the hub. The hub acts on the member as the ServiceAccount %[2]s in
the member namespace (--member-namespace, default %[1]s), bound to the ClusterRole %[3]s
(RayServices, Namespaces and ClusterReports only: no Secrets, no Pods) and to the Role %[4]s
(minting its own tokens, and no other ServiceAccount's). When the ClusterRoleBinding %[3]s
exists and is not labelled %[7]s=%[8]s, the spoke chart installed this identity and join
uses it as is, creating nothing on the member. Otherwise join ensures the namespace, the
ServiceAccount, the ClusterRole, the Role and their bindings (labelled %[7]s=%[8]s). Either
way it requests a bound token of the ServiceAccount lasting --bootstrap-token-ttl; the hub
mints its own short-lived tokens with it, so it is needed again only when the hub restarts.
On the hub it ensures the hub namespace, a Secret NAME there holding the member's kubeconfig
under the key %[5]q and labelled %[6]s=true (the label the hub's kubeconfig provider
engages members by; it names the member after the Secret), and the MemberCluster NAME
referencing it. Re-running updates everything and rotates the token, which the hub takes
without re-engaging the member; the token is never printed.

With --traffic-namespace NS (repeatable; each must exist) join also gives the hub the Role and
RoleBinding %[9]s in NS: HTTPRoutes, Services and EndpointSlices there and nothing else, which
a PlacementPolicy's spec.traffic naming this member needs in the namespace of each RayService
it routes (the route lives with its RayService), and the guard join applies lets the hub write
those in NS. --traffic-all-namespaces grants the same in every namespace instead (the
ClusterRole and ClusterRoleBinding %[9]s), an explicit opt-in; the guard then lets the hub
write them only in namespaces it created or the member's admin labelled allowed. A Role of that
name the spoke chart made (hubTraffic) is used as is.

The guard join applies refuses RayServices whose Services are of type NodePort or LoadBalancer.
With --allow-node-ports it allows them, as the spoke chart's hubPolicy.allowNodePorts does: a
PlacementPolicy's spec.traffic routes to a member at the address of its serve Service's load
balancer (or node port), so a member that takes traffic needs it. Re-running join with or
without the flag updates the guard; it does not change a guard the spoke chart installed.

The guard lets the hub write only into namespaces labelled fleet.rayfleet.io/hub-namespace
(created, set by the hub on the namespaces it creates, or allowed, set by the member's admin).
Before anything else join labels allowed each namespace holding a RayService of the hub named
--hub-name that has no such label (the hub before this guard created them), and prints it; so
re-run join after upgrading the spoke chart.

An API server loads a new guard asynchronously: before requesting the token, join waits up to
--guard-timeout until dry runs made as the hub (impersonating its ServiceAccount) are refused by
the guard, and fails otherwise, naming the policy, with nothing written on the hub.
`

const unjoinLong = `Removes a member from the hub: deletes the MemberCluster NAME and the kubeconfig Secret NAME in
the hub namespace. With --member-kubeconfig or --member-context it also deletes the hub's
ServiceAccount, its ClusterRole, Role and bindings (and a legacy token Secret) on the member,
revoking every token of the hub, but only those rayfleet join created (labelled %[1]s=%[2]s): a hub identity the
spoke chart installed is left in place and listed; remove it with the chart (hubAccess.create).
The hub's traffic Roles and RoleBindings %[3]s that join created go too, in every
namespace. The member's namespace stays.
`

const statusLong = `Prints where each RayService runs (from the hub's RayServiceBindings: status, Ready condition,
Serve endpoints and spec revision per cluster) and how each member is doing (from the
MemberClusters: Ready, free accelerators by resource name, free CPU, heartbeat age). With -o
(json, yaml, name, jsonpath, ...) it prints those RayServiceBindings and MemberClusters as a
List instead.
`

// joinOptions are `rayfleet join`'s flags and where it writes.
type joinOptions struct {
	streams
	hub  *hubFlags
	args joinArgs
}

func newJoinCommand(s streams, hub *hubFlags) *cobra.Command {
	return (&joinOptions{streams: s, hub: hub}).command()
}

func (o *joinOptions) command() *cobra.Command {
	a := &o.args
	cmd := &cobra.Command{
		Use:   "join --name NAME",
		Short: "Join a member cluster to the hub.",
		Long: fmt.Sprintf(joinLong, membership.DefaultMemberNamespace, membership.ServiceAccountName,
			membership.ClusterRoleName, membership.TokenRoleName, fleetv1alpha1.DefaultKubeconfigKey, fleetv1alpha1.KubeconfigSecretLabel,
			membership.ManagedByLabel, membership.ManagedByValue, membership.TrafficRoleName) + hubAndMemberNote,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(cmd, args); err != nil {
				return err
			}
			return join(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	o.hub.registerAliases(cmd, false)
	a.member.register(fs, "member", "member")
	fs.StringVar(&a.name, "name", "", "name of the member (a DNS label); names the MemberCluster and the kubeconfig Secret")
	fs.StringVar(&a.hubNamespace, "hub-namespace", labels.DefaultHubNamespace, "the hub's namespace, holding the kubeconfig Secrets")
	fs.StringVar(&a.memberNamespace, "member-namespace", membership.DefaultMemberNamespace, memberNamespaceUsage)
	fs.StringVar(&a.memberServer, "member-server", "", "member API server URL as the hub reaches it (default the member context's)")
	fs.DurationVar(&a.bootstrapTokenTTL, "bootstrap-token-ttl", membership.DefaultBootstrapTokenTTL,
		"lifetime of the token in the hub's kubeconfig: how long the hub may still (re)start with it; re-run join before it ends")
	fs.Var(&a.trafficNamespaces, "traffic-namespace", "a namespace on the member (a RayService's, where its route lives) where the hub may manage HTTPRoutes, Services and EndpointSlices; repeatable (default none)")
	fs.BoolVar(&a.trafficAllNamespaces, "traffic-all-namespaces", false, "grant the hub those traffic rights in every namespace of the member (a ClusterRole)")
	fs.BoolVar(&a.allowNodePorts, "allow-node-ports", false, "let the hub create RayServices whose Services are of type NodePort or LoadBalancer: "+
		"routing traffic to this member goes through its serve Service's load balancer or node port")
	fs.StringVar(&a.hubName, "hub-name", labels.DefaultHubName, "the hub's --hub-name: namespaces holding its RayServices that lack "+
		labels.HubNamespace+" are labelled "+labels.HubNamespaceAllowed+" so that the guard keeps taking its writes there")
	fs.DurationVar(&a.guardTimeout, "guard-timeout", membership.DefaultGuardTimeout, "how long to wait, before writing anything on the hub, "+
		"until the member's API server enforces the guard (a dry run as the hub is refused); join fails after it")
	return cmd
}

// hubAndMemberNote says how join's and unjoin's two clusters are selected.
const hubAndMemberNote = `

The hub is the cluster kubectl's connection flags select (--kubeconfig, --context, --server,
...; --hub-kubeconfig and --hub-context are the same as --kubeconfig and --context). The member
is selected by --member-kubeconfig and --member-context alone.`

func (o *joinOptions) complete(cmd *cobra.Command, args []string) error {
	a := &o.args
	if err := noArgs(cmd, args); err != nil {
		return err
	}
	hub, err := o.hub.complete(cmd)
	if err != nil {
		return err
	}
	a.hub = hub
	for _, ns := range a.trafficNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return usageError(cmd, fmt.Sprintf("--traffic-namespace %q: %s", ns, strings.Join(errs, "; ")))
		}
	}
	if errs := validation.IsValidLabelValue(a.hubName); len(errs) > 0 || a.hubName == "" {
		return usageError(cmd, fmt.Sprintf("--hub-name %q: not a label value, as the hub's --hub-name is: %s", a.hubName, strings.Join(errs, "; ")))
	}
	if a.trafficAllNamespaces && len(a.trafficNamespaces) > 0 {
		return usageError(cmd, "--traffic-namespace and --traffic-all-namespaces exclude each other: every namespace includes those named")
	}
	if !a.member.given() {
		return usageError(cmd, "--member-kubeconfig or --member-context is required")
	}
	if a.bootstrapTokenTTL < membership.MinBootstrapTokenTTL {
		return usageError(cmd, fmt.Sprintf("--bootstrap-token-ttl must be at least %s, the shortest token Kubernetes grants", membership.MinBootstrapTokenTTL))
	}
	if a.guardTimeout <= 0 {
		return usageError(cmd, "--guard-timeout must be positive: the hub is registered only once the guard is in force")
	}
	if err := checkMemberNamespace(cmd, a.memberNamespace); err != nil {
		return err
	}
	return checkNames(cmd, a.name, a.hubNamespace)
}

// unjoinOptions are `rayfleet unjoin`'s flags and where it writes.
type unjoinOptions struct {
	streams
	hub  *hubFlags
	args unjoinArgs
}

func newUnjoinCommand(s streams, hub *hubFlags) *cobra.Command {
	return (&unjoinOptions{streams: s, hub: hub}).command()
}

func (o *unjoinOptions) command() *cobra.Command {
	a := &o.args
	cmd := &cobra.Command{
		Use:   "unjoin --name NAME",
		Short: "Remove a member cluster from the hub.",
		Long:  fmt.Sprintf(unjoinLong, membership.ManagedByLabel, membership.ManagedByValue, membership.TrafficRoleName) + hubAndMemberNote,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(cmd, args); err != nil {
				return err
			}
			return unjoin(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	o.hub.registerAliases(cmd, false)
	a.member.register(fs, "member", "member (optional: also removes the hub's identity there)")
	fs.StringVar(&a.name, "name", "", "name of the member")
	fs.StringVar(&a.hubNamespace, "hub-namespace", labels.DefaultHubNamespace, "the hub's namespace, holding the kubeconfig Secrets")
	fs.StringVar(&a.memberNamespace, "member-namespace", membership.DefaultMemberNamespace, memberNamespaceUsage)
	return cmd
}

func (o *unjoinOptions) complete(cmd *cobra.Command, args []string) error {
	if err := noArgs(cmd, args); err != nil {
		return err
	}
	hub, err := o.hub.complete(cmd)
	if err != nil {
		return err
	}
	o.args.hub = hub
	if err := checkMemberNamespace(cmd, o.args.memberNamespace); err != nil {
		return err
	}
	return checkNames(cmd, o.args.name, o.args.hubNamespace)
}

// statusOptions are `rayfleet status`'s flags and where it writes.
type statusOptions struct {
	streams
	hub   *hubFlags
	print *genericclioptions.PrintFlags
	args  statusArgs
}

func newStatusCommand(s streams, hub *hubFlags) *cobra.Command {
	return (&statusOptions{streams: s, hub: hub}).command()
}

func (o *statusOptions) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the fleet's status.",
		Long:  statusLong,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(cmd, args); err != nil {
				return err
			}
			return status(cmd.Context(), o)
		},
	}
	o.hub.registerAliases(cmd, true)
	cmd.Flags().BoolVarP(&o.args.allNamespaces, "all-namespaces", "A", false, "RayServices of every namespace")
	o.print = addPrintFlags(cmd, true)
	return cmd
}

func (o *statusOptions) complete(cmd *cobra.Command, args []string) error {
	if err := noArgs(cmd, args); err != nil {
		return err
	}
	hub, err := o.hub.complete(cmd)
	if err != nil {
		return err
	}
	o.args.hub, o.args.namespace = hub, o.hub.namespace()
	if o.args.allNamespaces && o.args.namespace != "" {
		return usageError(cmd, "-n and -A are mutually exclusive")
	}
	o.args.output, err = checkOutput(cmd, o.print, true)
	return err
}

// noArgs refuses positional arguments, which are a mistake with these commands (`join m1`
// instead of `join --name m1`).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError(cmd, "unexpected arguments: "+strings.Join(args, " "))
	}
	return nil
}

// checkNames validates the member name and hub namespace before any API call.
func checkNames(cmd *cobra.Command, name, hubNamespace string) error {
	if name == "" {
		return usageError(cmd, "--name is required")
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return usageError(cmd, fmt.Sprintf("--name %q: %s", name, strings.Join(errs, "; ")))
	}
	if errs := validation.IsDNS1123Label(hubNamespace); len(errs) > 0 {
		return usageError(cmd, fmt.Sprintf("--hub-namespace %q: %s", hubNamespace, strings.Join(errs, "; ")))
	}
	return nil
}

// memberNamespaceUsage documents --member-namespace of join and unjoin.
const memberNamespaceUsage = "the member's namespace holding the hub's ServiceAccount and token (the spoke chart's release namespace)"

// checkMemberNamespace validates --member-namespace before any API call.
func checkMemberNamespace(cmd *cobra.Command, namespace string) error {
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return usageError(cmd, fmt.Sprintf("--member-namespace %q: %s", namespace, strings.Join(errs, "; ")))
	}
	return nil
}

// stringList is a repeatable string flag.
type stringList []string

// String joins the values with commas.
func (l *stringList) String() string { return strings.Join(*l, ",") }

// Set adds one value.
func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// Type names the value in the usage.
func (l *stringList) Type() string { return "namespace" }
