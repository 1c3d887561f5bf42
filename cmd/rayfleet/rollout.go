package main

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/spf13/cobra"

	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/rollout"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// rolloutLong describes `rayfleet rollout`.
const rolloutLong = `Shows and steers the rollout of a hub RayService's spec changes across its member clusters,
as the hub records it in the RayServiceBinding of the same name (status.rollout and the
per-cluster revision and rollout phase) and in the RayService's ControllerRevisions. A bare
<name> is looked up in -n's namespace, else the hub context's.`

// newRolloutCommand builds `rayfleet rollout` and its commands.
func newRolloutCommand(s streams, hub *hubFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout <command> <namespace>/<name>",
		Short: "Show and steer a RayService's rollout: status, history, pause, resume, approve, undo.",
		Long:  rolloutLong,
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRun,
	}
	takesHub(cmd, true)
	for _, v := range rolloutVerbs {
		cmd.AddCommand((&rolloutOptions{streams: s, hub: hub}).command(v))
	}
	return cmd
}

// rolloutCommand connects to the hub and runs the verb.
func rolloutCommand(ctx context.Context, o *rolloutOptions) error {
	a, s, verb := &o.args, o.streams, o.verb
	hub, err := o.hub.connect(a.hub)
	if err != nil {
		return err
	}
	key := a.key(hub.namespace)
	if verb == "status" && a.watch {
		wc, watchErr := client.NewWithWatch(hub.Config, client.Options{Scheme: hub.Client.Scheme()})
		if watchErr != nil {
			return fmt.Errorf("connecting to the hub at %s: %w", hub.Config.Host, watchErr)
		}
		return rollout.Watch(ctx, wc, key, s.Out, s.clock)
	}
	if verb == "undo" {
		return rolloutUndo(ctx, hub.Client, key, a.toRevision, s)
	}
	v, err := rollout.Read(ctx, hub.Client, key)
	if err != nil {
		return err
	}
	switch verb {
	case "status":
		if a.output != "" {
			return printObject(s.Out, o.print, hub.Client.Scheme(), v.Binding)
		}
		return rollout.WriteStatus(s.Out, v, s.clock.Now())
	case "history":
		return rolloutHistory(s, o, v, hub.Client.Scheme())
	case "pause", "resume":
		return rolloutPause(ctx, hub.Client, v, verb == "pause", s)
	default: // approve
		return rolloutApprove(ctx, hub.Client, v, a.stage, s)
	}
}

// rolloutHistory prints the revisions, or one, as a table or YAML, or with -o's printer.
func rolloutHistory(s streams, o *rolloutOptions, v *rollout.View, scheme *runtime.Scheme) error {
	a := &o.args
	switch {
	case a.output == "" && a.revision != 0:
		return rollout.WriteRevision(s.Out, v, a.revision)
	case a.output == "":
		return rollout.WriteHistory(s.Out, v, s.clock.Now())
	case a.revision != 0:
		r, err := v.Revision(a.revision)
		if err != nil {
			return err
		}
		return printObject(s.Out, o.print, scheme, r)
	default:
		objs := make([]client.Object, len(v.Revisions))
		for i := range v.Revisions {
			objs[i] = &v.Revisions[i]
		}
		return printList(s.Out, o.print, scheme, objs...)
	}
}

func rolloutPause(ctx context.Context, c client.Client, v *rollout.View, pause bool, s streams) error {
	changed, err := rollout.SetPaused(ctx, c, v, pause)
	if err != nil {
		return err
	}
	switch {
	case pause && changed:
		fmt.Fprintf(s.Out, "RayService %s paused: no cluster starts until resume; clusters in flight finish\n", v.Key())
	case pause:
		fmt.Fprintf(s.Out, "RayService %s is paused already (%s=true): no cluster starts until resume\n", v.Key(), labels.Paused)
	case changed:
		fmt.Fprintf(s.Out, "RayService %s resumed: the rollout continues where it stopped\n", v.Key())
	default:
		fmt.Fprintf(s.Out, "RayService %s is not paused: nothing to resume\n", v.Key())
	}
	return nil
}

func rolloutApprove(ctx context.Context, c client.Client, v *rollout.View, stage string, s streams) error {
	a, err := rollout.Approve(ctx, c, v, stage)
	if err != nil {
		return err
	}
	if !a.Changed {
		fmt.Fprintf(s.Out, "stage %s of RayService %s is approved already (%s=%s)\n", a.Stage, v.Key(), labels.ApprovedStage, a.Value)
		return nil
	}
	fmt.Fprintf(s.Out, "approved stage %s of RayService %s (%s=%s): the hub starts it when the rollout reaches it\n",
		a.Stage, v.Key(), labels.ApprovedStage, a.Value)
	return nil
}

func rolloutUndo(ctx context.Context, c client.Client, key types.NamespacedName, to int64, s streams) error {
	r, err := rollout.Undo(ctx, c, key, to)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "RayService %s rolled back to revision %d (%s): the hub rolls it out as a spec change\n", key, r.Revision, r.Name)
	if note := r.TrafficNote(); note != "" {
		fmt.Fprintln(s.Out, note)
	}
	fmt.Fprintln(s.Out, "if a GitOps tool syncs this RayService, commit the same spec to its source, or it rolls the change forward again")
	return nil
}
