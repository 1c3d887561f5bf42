package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

const rolloutUsage = `Usage: rayfleet rollout <command> <namespace>/<name> [flags]

Shows and steers the rollout of a hub RayService's spec changes across its member clusters,
as the hub records it in the RayServiceBinding of the same name (status.rollout and the
per-cluster revision and rollout phase) and in the RayService's ControllerRevisions. A bare
<name> is looked up in the hub context's namespace.

Commands:
  status    Show the rollout: target, good and failed revision, phase, and per stage one line
            per cluster (revision, phase, soak left, the member's reason); a blue/green
            rollout's step and colours, and traffic weights; --watch follows it.
  history   List the revisions; --revision N prints one as YAML.
  pause     Stop starting clusters (clusters in flight finish).
  resume    Let a paused rollout continue.
  approve   Approve the stage the rollout waits for (or --stage S ahead); a BlueGreen
            rollout's stages are shift and promote.
  undo      Write the last good revision's spec (or --to-revision N) back to the RayService.

Run 'rayfleet rollout <command> -h' for a command's flags.
`

const rolloutStatusUsage = `Usage: rayfleet rollout status <namespace>/<name> [flags]

Prints the RayService's rollout: the target, last good and failed revisions, the phase, the
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
rollout of the RayService's current spec is Complete, 1 if it is Stalled.

Flags:
`

const rolloutHistoryUsage = `Usage: rayfleet rollout history <namespace>/<name> [flags]

Lists the RayService's revisions (its ControllerRevisions, labelled %s=<name> and controlled
by it), oldest first: number, name, age, whether the rollout targets it, was last done on every
cluster with it (good) or rolled back from it (failed), and the clusters whose copy carries it.
With --revision N it prints revision N's content as YAML: the RayService spec and the
PlacementPolicy overrides it was made of.

Flags:
`

const rolloutPauseUsage = `Usage: rayfleet rollout pause <namespace>/<name> [flags]

Annotates the hub RayService %s=true: the hub starts no further cluster on the target revision
until 'rayfleet rollout resume'; clusters already updating finish, and nothing is undone.

Flags:
`

const rolloutResumeUsage = `Usage: rayfleet rollout resume <namespace>/<name> [flags]

Removes the annotation %s from the hub RayService: a paused rollout continues where it
stopped.

Flags:
`

const rolloutApproveUsage = `Usage: rayfleet rollout approve <namespace>/<name> [flags]

Approves a stage of the rollout to the target revision: annotates the RayServiceBinding
%[1]s=<target revision>/<stage>. Without --stage it approves the stage the rollout awaits
approval for, and refuses when none does. With --stage it approves that stage, ahead of time if
the rollout has not reached it; an approval names the revision, so it does not carry over to
the next spec change.

A BlueGreen rollout with approval waits twice: for stage %[2]s before the first traffic step,
and for stage %[3]s before green takes all of the traffic. The binding holds one approval at
a time, so %[3]s cannot be approved ahead while %[2]s still waits.

Flags:
`

const rolloutUndoUsage = `Usage: rayfleet rollout undo <namespace>/<name> [flags]

Writes a revision's spec back to the hub RayService (the last good revision, or --to-revision
N), as 'kubectl rollout undo' does for a Deployment; the hub then rolls it out like any spec
change. The PlacementPolicy's overrides stay as they are now. It refuses a revision whose spec
is the RayService's already. If a GitOps tool (Argo CD, Flux, ...) syncs this RayService,
commit the same spec to its source, or the tool rolls the change forward again.

During a blue/green rollout the hub sends all of the traffic back to blue at once; undone to
the last good revision, green leaves, and to another revision, green takes that one first.

Flags:
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
}

// key is the RayService's key, in defaultNamespace for a bare name.
func (a *rolloutArgs) key(defaultNamespace string) types.NamespacedName {
	ns := a.namespace
	if ns == "" {
		ns = defaultNamespace
	}
	return types.NamespacedName{Namespace: ns, Name: a.name}
}

// parseRollout parses the arguments of `rayfleet rollout verb`: one <namespace>/<name>, and
// flags before or after it as kubectl takes them.
func parseRollout(verb string, args []string, stderr io.Writer) (*rolloutArgs, error) {
	a := &rolloutArgs{}
	var usage string
	switch verb {
	case "status":
		usage = rolloutStatusUsage
	case "history":
		usage = fmt.Sprintf(rolloutHistoryUsage, labels.OriginName)
	case "pause":
		usage = fmt.Sprintf(rolloutPauseUsage, labels.Paused)
	case "resume":
		usage = fmt.Sprintf(rolloutResumeUsage, labels.Paused)
	case "approve":
		usage = fmt.Sprintf(rolloutApproveUsage, labels.ApprovedStage, fleetv1alpha1.BlueGreenShiftStage, fleetv1alpha1.BlueGreenPromoteStage)
	case "undo":
		usage = rolloutUndoUsage
	}
	fs := newFlagSet("rollout "+verb, usage, stderr)
	a.hub.register(fs, "hub", "hub")
	switch verb {
	case "status":
		fs.BoolVar(&a.watch, "watch", false, "print the rollout again on every change until it is Complete (exit 0) or Stalled (exit 1)")
		fs.BoolVar(&a.watch, "w", false, "same as --watch")
	case "history":
		fs.Int64Var(&a.revision, "revision", 0, "print this revision's content as YAML")
	case "approve":
		fs.StringVar(&a.stage, "stage", "", "the stage to approve (default the stage the rollout awaits approval for)")
	case "undo":
		fs.Int64Var(&a.toRevision, "to-revision", 0, "the revision to go back to (default the last good revision)")
	}
	target, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	if a.revision < 0 || a.toRevision < 0 {
		return nil, usageError(fs, "revision numbers start at 1")
	}
	if a.stage != "" {
		if errs := validation.IsDNS1123Label(a.stage); len(errs) > 0 {
			return nil, usageError(fs, fmt.Sprintf("--stage %q: %s", a.stage, strings.Join(errs, "; ")))
		}
	}
	return a, a.setTarget(fs, target)
}

// parseInterspersed parses flags before and after positional arguments and returns the
// positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// setTarget takes the one positional argument, <namespace>/<name> or <name>.
func (a *rolloutArgs) setTarget(fs *flag.FlagSet, target []string) error {
	switch len(target) {
	case 0:
		return usageError(fs, "the RayService is required: <namespace>/<name>")
	case 1:
	default:
		return usageError(fs, "unexpected arguments: "+strings.Join(target[1:], " "))
	}
	ns, name, found := strings.Cut(target[0], "/")
	if !found {
		ns, name = "", target[0]
	} else if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return usageError(fs, fmt.Sprintf("namespace %q: %s", ns, strings.Join(errs, "; ")))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return usageError(fs, fmt.Sprintf("RayService name %q: %s", name, strings.Join(errs, "; ")))
	}
	a.namespace, a.name = ns, name
	return nil
}
