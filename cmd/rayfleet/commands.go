package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/fleetstatus"
	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/membership"
	"github.com/rayfleet/rayfleet/shared/labels"
	rfscheme "github.com/rayfleet/rayfleet/shared/scheme"
)

// connected is one cluster selected by clusterFlags.
type connected struct {
	membership.Cluster
	// namespace is the context's namespace, "default" when it sets none.
	namespace string
}

// connect builds a client for the cluster c selects, with kubectl's loading rules.
func connect(c clusterFlags, role string) (*connected, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.context})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the %s's kubeconfig: %w", role, err)
	}
	namespace, _, err := loader.Namespace()
	if err != nil {
		return nil, fmt.Errorf("reading the %s context's namespace: %w", role, err)
	}
	scheme, err := rfscheme.New()
	if err != nil {
		return nil, err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the %s at %s: %w", role, cfg.Host, err)
	}
	return &connected{Cluster: membership.Cluster{Client: cl, Config: cfg}, namespace: namespace}, nil
}

// streams is where a command writes, and the clock heartbeat ages are measured with.
type streams struct {
	stdout, stderr io.Writer
	clock          clock.PassiveClock
}

// commandFunc runs one command.
type commandFunc func(ctx context.Context, args []string, s streams) error

// runCommand maps a command's outcome to an exit code: 0 on success or -h, 2 on a usage
// error (already printed by the flag set), 1 otherwise.
func runCommand(ctx context.Context, name string, cmd commandFunc, args []string, s streams) int {
	err := cmd(ctx, args, s)
	var uerr usageErr
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.As(err, &uerr):
		return 2
	default:
		fmt.Fprintf(s.stderr, "rayfleet %s: %v\n", name, err)
		return 1
	}
}

// usageErr marks errors of the command line itself.
type usageErr struct{ error }

func (e usageErr) Unwrap() error { return e.error }

func join(ctx context.Context, args []string, s streams) error {
	a, err := parseJoin(args, s.stderr)
	if err != nil {
		return usageErr{err}
	}
	hub, err := connect(a.hub, "hub")
	if err != nil {
		return err
	}
	member, err := connect(a.member, "member")
	if err != nil {
		return err
	}
	res, err := membership.Join(ctx, hub.Cluster, member.Cluster, membership.JoinOptions{
		Name: a.name, HubNamespace: a.hubNamespace, MemberNamespace: a.memberNamespace,
		MemberServer: a.memberServer, BootstrapTokenTTL: a.bootstrapTokenTTL, TrafficNamespaces: a.trafficNamespaces,
		TrafficAllNamespaces: a.trafficAllNamespaces, AllowNodePorts: a.allowNodePorts, HubName: a.hubName,
	})
	if err != nil {
		return err
	}
	printGuard(s.stdout, res, a.allowNodePorts)
	for _, ns := range res.Adopted {
		fmt.Fprintf(s.stdout, "labelled namespace %s %s=%s: it holds RayServices of hub %s\n", ns, labels.HubNamespace, labels.HubNamespaceAllowed, a.hubName)
	}
	for _, role := range res.TrafficRoles {
		where := "in every namespace"
		if role.Key.Namespace != "" {
			where = "in namespace " + role.Key.Namespace
		}
		if role.ManagedBy == membership.ManagedByValue {
			fmt.Fprintf(s.stdout, "applied the hub's traffic rights %s: %s\n", where, role)
		} else {
			fmt.Fprintf(s.stdout, "using the hub's traffic rights found %s: %s\n", where, role)
		}
	}
	fmt.Fprintf(s.stdout, "member %s joined: the hub reaches %s with the kubeconfig in Secret %s\n", a.name, res.Server, res.Secret)
	fmt.Fprintf(s.stdout, "its bootstrap token expires at %s: re-run join before then\n", res.TokenExpires.UTC().Format(time.RFC3339))
	return nil
}

// printGuard says which guard the hub's identity on the member has: join's (with or without
// node ports) or the spoke chart's, which --allow-node-ports does not change.
func printGuard(w io.Writer, res *membership.JoinResult, allowNodePorts bool) {
	switch {
	case res.Existing != nil:
		fmt.Fprintf(w, "using the hub identity installed by the spoke chart: %s\n", res.Existing)
		if allowNodePorts {
			fmt.Fprintln(w, "--allow-node-ports changed nothing: the spoke chart's guard applies; set its hubPolicy.allowNodePorts instead")
		}
	case allowNodePorts:
		fmt.Fprintln(w, "applied the hub identity and its guard: the hub may create on this member only RayServices "+
			"within the Pod Security baseline (no privileged, host namespaces or hostPath; ServiceAccount default); "+
			"their Services may be of type NodePort or LoadBalancer")
	default:
		fmt.Fprintln(w, "applied the hub identity and its guard: the hub may create on this member only RayServices "+
			"within the Pod Security baseline (no privileged, host namespaces or hostPath; ServiceAccount default; "+
			"no NodePort or LoadBalancer Services)")
	}
}

func unjoin(ctx context.Context, args []string, s streams) error {
	a, err := parseUnjoin(args, s.stderr)
	if err != nil {
		return usageErr{err}
	}
	hub, err := connect(a.hub, "hub")
	if err != nil {
		return err
	}
	var memberClient client.Client
	if a.member.given() {
		member, connectErr := connect(a.member, "member")
		if connectErr != nil {
			return connectErr
		}
		memberClient = member.Client
	}
	res, err := membership.Unjoin(ctx, hub.Client, memberClient, membership.UnjoinOptions{
		Name: a.name, HubNamespace: a.hubNamespace, MemberNamespace: a.memberNamespace,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(s.stdout, "member %s unjoined\n", a.name)
	if len(res.Kept) > 0 {
		fmt.Fprintln(s.stdout, "left on the member, as rayfleet join did not create them (the hub's token stays valid until the spoke chart removes them):")
		for _, ref := range res.Kept {
			fmt.Fprintf(s.stdout, "  %s\n", ref)
		}
	}
	return nil
}

func status(ctx context.Context, args []string, s streams) error {
	a, err := parseStatus(args, s.stderr)
	if err != nil {
		return usageErr{err}
	}
	hub, err := connect(a.hub, "hub")
	if err != nil {
		return err
	}
	namespace := a.namespace
	switch {
	case a.allNamespaces:
		namespace = ""
	case namespace == "":
		namespace = hub.namespace
	}
	fleet, err := fleetstatus.Read(ctx, hub.Client, namespace)
	if err != nil {
		return err
	}
	return fleetstatus.Write(s.stdout, fleet, s.clock.Now())
}
