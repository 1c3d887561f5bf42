package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/fleetstatus"
	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/membership"
	"github.com/rayfleet/rayfleet/shared/labels"
)

func join(ctx context.Context, o *joinOptions) error {
	a, s := &o.args, o.streams
	hub, err := o.hub.connect(a.hub)
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
		GuardTimeout: a.guardTimeout,
	})
	if err != nil {
		return err
	}
	printGuard(s.Out, res, a.allowNodePorts)
	if len(res.Guard.Enforced) > 0 {
		fmt.Fprintf(s.Out, "the guard is in force: %s refused the hub's dry runs\n", strings.Join(res.Guard.Enforced, ", "))
	}
	for _, note := range res.Guard.Notes {
		fmt.Fprintf(s.Out, "guard: %s\n", note)
	}
	for _, ns := range res.Adopted {
		fmt.Fprintf(s.Out, "labelled namespace %s %s=%s: it holds RayServices of hub %s\n", ns, labels.HubNamespace, labels.HubNamespaceAllowed, a.hubName)
	}
	for _, role := range res.TrafficRoles {
		where := "in every namespace"
		if role.Key.Namespace != "" {
			where = "in namespace " + role.Key.Namespace
		}
		if role.ManagedBy == membership.ManagedByValue {
			fmt.Fprintf(s.Out, "applied the hub's traffic rights %s: %s\n", where, role)
		} else {
			fmt.Fprintf(s.Out, "using the hub's traffic rights found %s: %s\n", where, role)
		}
	}
	fmt.Fprintf(s.Out, "member %s joined: the hub reaches %s with the kubeconfig in Secret %s\n", a.name, res.Server, res.Secret)
	fmt.Fprintf(s.Out, "its bootstrap token expires at %s: re-run join before then\n", res.TokenExpires.UTC().Format(time.RFC3339))
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

func unjoin(ctx context.Context, o *unjoinOptions) error {
	a, s := &o.args, o.streams
	hub, err := o.hub.connect(a.hub)
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
	fmt.Fprintf(s.Out, "member %s unjoined\n", a.name)
	if len(res.Kept) > 0 {
		fmt.Fprintln(s.Out, "left on the member, as rayfleet join did not create them (the hub's token stays valid until the spoke chart removes them):")
		for _, ref := range res.Kept {
			fmt.Fprintf(s.Out, "  %s\n", ref)
		}
	}
	return nil
}

func status(ctx context.Context, o *statusOptions) error {
	a, s := &o.args, o.streams
	hub, err := o.hub.connect(a.hub)
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
	if a.output != "" && a.output != outputWide {
		objs := make([]client.Object, 0, len(fleet.Bindings)+len(fleet.Members))
		for i := range fleet.Bindings {
			objs = append(objs, &fleet.Bindings[i])
		}
		for i := range fleet.Members {
			objs = append(objs, &fleet.Members[i])
		}
		return printList(s.Out, o.print, hub.Client.Scheme(), objs...)
	}
	return fleetstatus.Write(s.Out, fleet, s.clock.Now(), a.output == outputWide)
}
