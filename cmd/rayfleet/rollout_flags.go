package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/spf13/cobra"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

const rolloutStatusLong = `Prints the RayService's rollout: the target, last good and failed revisions, the phase, the
current stage and the hub's message; then, stage by stage in the order the stages started and
then the placed clusters no stage has started yet, one line per cluster: the revision its copy
carries, its rollout phase (Pending, Updating, Soaking, Done, Failed), the soak time left while
Soaking (from the soakSeconds of the PlacementPolicy the binding names, 60s without one) and the
reason of the member RayService's Ready condition.

While a BlueGreen rollout is in flight it also prints its step, green's share of the traffic and
the blue and green clusters, and lists the clusters by colour (blue first) instead of by stage.
When the hub routes the RayService's traffic, each cluster's weight (its share of the
HTTPRoute's traffic) and serve address are listed too, and the hub RayService's TrafficShifting
condition is printed.

With --watch it prints it again when the binding or the RayService changes, and exits 0 once the
rollout of the RayService's current spec is Complete, 1 if it is Stalled. With -o (json, yaml,
name, jsonpath, ...) it prints the RayServiceBinding, which holds the rollout, instead.
`

const rolloutHistoryLong = `Lists the RayService's revisions (its ControllerRevisions, labelled %s=<name> and controlled
by it), oldest first: number, name, age, whether the rollout targets it, was last done on every
cluster with it (good) or rolled back from it (failed), and the clusters whose copy carries it.
With --revision N it prints revision N's content as YAML: the RayService spec and the
PlacementPolicy overrides it was made of. With -o (json, yaml, name, jsonpath, ...) it prints
the ControllerRevisions as a List, or revision N alone.
`

const rolloutPauseLong = `Annotates the hub RayService %s=true: the hub starts no further cluster on the target revision
until 'rayfleet rollout resume'; clusters already updating finish, and nothing is undone.
`

const rolloutResumeLong = `Removes the annotation %s from the hub RayService: a paused rollout continues where it
stopped.
`

const rolloutApproveLong = `Approves a stage of the rollout to the target revision: annotates the RayServiceBinding
%[1]s=<target revision>/<stage>. Without --stage it approves the stage the rollout awaits
approval for, and refuses when none does. With --stage it approves that stage, ahead of time if
the rollout has not reached it; an approval names the revision, so it does not carry over to
the next spec change.

A BlueGreen rollout with approval waits twice: for stage %[2]s before the first traffic step,
and for stage %[3]s before green takes all of the traffic. The binding holds one approval at
a time, so %[3]s cannot be approved ahead while %[2]s still waits.
`

const rolloutUndoLong = `Writes a revision's spec back to the hub RayService (the last good revision, or --to-revision
N), as 'kubectl rollout undo' does for a Deployment; the hub then rolls it out like any spec
change. The PlacementPolicy's overrides stay as they are now. It refuses a revision whose spec
is the RayService's already. If a GitOps tool (Argo CD, Flux, ...) syncs this RayService,
commit the same spec to its source, or the tool rolls the change forward again.

During a blue/green rollout the hub sends all of the traffic back to blue at once; undone to
the last good revision, green leaves, and to another revision, green takes that one first.
`

// rolloutArgs are the target and flags of one `rayfleet rollout` command.
type rolloutArgs struct {
	hub clusterFlags
	// namespace and name of the hub RayService; namespace is empty for a bare name.
	namespace, name string
	watch           bool
	revision        int64
	stage           string
	toRevision      int64
	// output is -o's format (status and history); empty prints the tables.
	output string
}

// key is the RayService's key, in defaultNamespace (-n, else the hub context's) for a bare name.
func (a *rolloutArgs) key(defaultNamespace string) types.NamespacedName {
	ns := a.namespace
	if ns == "" {
		ns = defaultNamespace
	}
	return types.NamespacedName{Namespace: ns, Name: a.name}
}

// rolloutOptions are one `rayfleet rollout` command's flags and where it writes.
type rolloutOptions struct {
	streams
	verb  string
	hub   *hubFlags
	print *genericclioptions.PrintFlags
	args  rolloutArgs
}

// rolloutVerb is one command of `rayfleet rollout`.
type rolloutVerb struct {
	name, short, long string
}

// rolloutVerbs are the commands of `rayfleet rollout`, in the order the usage lists them.
var rolloutVerbs = []rolloutVerb{
	{"status", "Show the rollout per stage and cluster; --watch follows it.", rolloutStatusLong},
	{"history", "List the revisions; --revision N prints one.", fmt.Sprintf(rolloutHistoryLong, labels.OriginName)},
	{"pause", "Stop starting clusters (clusters in flight finish).", fmt.Sprintf(rolloutPauseLong, labels.Paused)},
	{"resume", "Let a paused rollout continue.", fmt.Sprintf(rolloutResumeLong, labels.Paused)},
	{"approve", "Approve the stage the rollout waits for (or --stage S ahead).",
		fmt.Sprintf(rolloutApproveLong, labels.ApprovedStage, fleetv1alpha1.BlueGreenShiftStage, fleetv1alpha1.BlueGreenPromoteStage)},
	{"undo", "Write the last good revision's spec (or --to-revision N) back to the RayService.", rolloutUndoLong},
}

// command builds the command of o.verb: one <namespace>/<name>, and flags before or after it
// as kubectl takes them.
func (o *rolloutOptions) command(v rolloutVerb) *cobra.Command {
	o.verb = v.name
	a := &o.args
	cmd := &cobra.Command{
		Use:   v.name + " <namespace>/<name>",
		Short: v.short,
		Long:  v.long,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.complete(cmd, args); err != nil {
				return err
			}
			return rolloutCommand(cmd.Context(), o)
		},
	}
	cmd.ValidArgsFunction = o.completeTarget
	fs := cmd.Flags()
	o.hub.registerAliases(cmd, true)
	switch v.name {
	case "status":
		fs.BoolVarP(&a.watch, "watch", "w", false, "print the rollout again on every change until it is Complete (exit 0) or Stalled (exit 1)")
		o.print = addPrintFlags(cmd, false)
	case "history":
		fs.Int64Var(&a.revision, "revision", 0, "print this revision's content as YAML")
		o.print = addPrintFlags(cmd, false)
	case "approve":
		fs.StringVar(&a.stage, "stage", "", "the stage to approve (default the stage the rollout awaits approval for)")
	case "undo":
		fs.Int64Var(&a.toRevision, "to-revision", 0, "the revision to go back to (default the last good revision)")
	}
	return cmd
}

func (o *rolloutOptions) complete(cmd *cobra.Command, target []string) error {
	a := &o.args
	hub, err := o.hub.complete(cmd)
	if err != nil {
		return err
	}
	a.hub = hub
	if a.revision < 0 || a.toRevision < 0 {
		return usageError(cmd, "revision numbers start at 1")
	}
	if a.stage != "" {
		if errs := validation.IsDNS1123Label(a.stage); len(errs) > 0 {
			return usageError(cmd, fmt.Sprintf("--stage %q: %s", a.stage, strings.Join(errs, "; ")))
		}
	}
	if o.print != nil {
		if a.output, err = checkOutput(cmd, o.print, false); err != nil {
			return err
		}
		if a.output != "" && a.watch {
			return usageError(cmd, "--watch prints the rollout as a table: it takes no -o")
		}
	}
	if err := a.setTarget(cmd, target); err != nil {
		return err
	}
	if ns := o.hub.namespace(); ns != "" && a.namespace != "" && ns != a.namespace {
		return usageError(cmd, fmt.Sprintf("-n %s and the namespace %s of the RayService differ", ns, a.namespace))
	}
	return nil
}

// setTarget takes the one positional argument, <namespace>/<name> or <name>.
func (a *rolloutArgs) setTarget(cmd *cobra.Command, target []string) error {
	switch len(target) {
	case 0:
		return usageError(cmd, "the RayService is required: <namespace>/<name>")
	case 1:
	default:
		return usageError(cmd, "unexpected arguments: "+strings.Join(target[1:], " "))
	}
	ns, name, found := strings.Cut(target[0], "/")
	if !found {
		ns, name = "", target[0]
	} else if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return usageError(cmd, fmt.Sprintf("namespace %q: %s", ns, strings.Join(errs, "; ")))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return usageError(cmd, fmt.Sprintf("RayService name %q: %s", name, strings.Join(errs, "; ")))
	}
	a.namespace, a.name = ns, name
	return nil
}

// completeTarget completes the RayService argument from the hub's RayServiceBindings (one per
// RayService RayFleet places): bare names in -n's namespace, else <namespace>/<name> in every
// namespace.
func (o *rolloutOptions) completeTarget(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	fail := cobra.ShellCompDirectiveError | cobra.ShellCompDirectiveNoFileComp
	hub, err := o.hub.connect(o.hub.merged())
	if err != nil {
		return nil, fail
	}
	var bindings fleetv1alpha1.RayServiceBindingList
	namespace := o.hub.namespace()
	if err := hub.Client.List(cmd.Context(), &bindings, client.InNamespace(namespace)); err != nil {
		return nil, fail
	}
	var out []cobra.Completion
	for _, b := range bindings.Items {
		target := b.Namespace + "/" + b.Name
		if namespace != "" {
			target = b.Name
		}
		if strings.HasPrefix(target, toComplete) {
			out = append(out, target)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
