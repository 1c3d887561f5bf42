package main

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/rollout"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// rolloutVerbs are the commands of `rayfleet rollout`, in the order the usage lists them.
var rolloutVerbs = []string{"status", "history", "pause", "resume", "approve", "undo"}

// runRollout dispatches `rayfleet rollout <verb>`.
func runRollout(ctx context.Context, args []string, s streams) int {
	if len(args) == 0 {
		fmt.Fprint(s.stderr, rolloutUsage)
		return 2
	}
	verb := args[0]
	switch {
	case verb == "help" || verb == "-h" || verb == "--help":
		fmt.Fprint(s.stdout, rolloutUsage)
		return 0
	case !slices.Contains(rolloutVerbs, verb):
		fmt.Fprintf(s.stderr, "rayfleet rollout: unknown command %q\n\n%s", verb, rolloutUsage)
		return 2
	}
	return runCommand(ctx, "rollout "+verb, func(ctx context.Context, args []string, s streams) error {
		return rolloutCommand(ctx, verb, args, s)
	}, args[1:], s)
}

// rolloutCommand parses one verb's arguments, connects to the hub and runs the verb.
func rolloutCommand(ctx context.Context, verb string, args []string, s streams) error {
	a, err := parseRollout(verb, args, s.stderr)
	if err != nil {
		return usageErr{err}
	}
	hub, err := connect(a.hub, "hub")
	if err != nil {
		return err
	}
	key := a.key(hub.namespace)
	if verb == "status" && a.watch {
		wc, watchErr := client.NewWithWatch(hub.Config, client.Options{Scheme: hub.Client.Scheme()})
		if watchErr != nil {
			return fmt.Errorf("connecting to the hub at %s: %w", hub.Config.Host, watchErr)
		}
		return rollout.Watch(ctx, wc, key, s.stdout, s.clock)
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
		return rollout.WriteStatus(s.stdout, v, s.clock.Now())
	case "history":
		if a.revision != 0 {
			return rollout.WriteRevision(s.stdout, v, a.revision)
		}
		return rollout.WriteHistory(s.stdout, v, s.clock.Now())
	case "pause", "resume":
		return rolloutPause(ctx, hub.Client, v, verb == "pause", s)
	default: // approve
		return rolloutApprove(ctx, hub.Client, v, a.stage, s)
	}
}

func rolloutPause(ctx context.Context, c client.Client, v *rollout.View, pause bool, s streams) error {
	changed, err := rollout.SetPaused(ctx, c, v, pause)
	if err != nil {
		return err
	}
	switch {
	case pause && changed:
		fmt.Fprintf(s.stdout, "RayService %s paused: no cluster starts until resume; clusters in flight finish\n", v.Key())
	case pause:
		fmt.Fprintf(s.stdout, "RayService %s is paused already (%s=true): no cluster starts until resume\n", v.Key(), labels.Paused)
	case changed:
		fmt.Fprintf(s.stdout, "RayService %s resumed: the rollout continues where it stopped\n", v.Key())
	default:
		fmt.Fprintf(s.stdout, "RayService %s is not paused: nothing to resume\n", v.Key())
	}
	return nil
}

func rolloutApprove(ctx context.Context, c client.Client, v *rollout.View, stage string, s streams) error {
	a, err := rollout.Approve(ctx, c, v, stage)
	if err != nil {
		return err
	}
	if !a.Changed {
		fmt.Fprintf(s.stdout, "stage %s of RayService %s is approved already (%s=%s)\n", a.Stage, v.Key(), labels.ApprovedStage, a.Value)
		return nil
	}
	fmt.Fprintf(s.stdout, "approved stage %s of RayService %s (%s=%s): the hub starts it when the rollout reaches it\n",
		a.Stage, v.Key(), labels.ApprovedStage, a.Value)
	return nil
}

func rolloutUndo(ctx context.Context, c client.Client, key types.NamespacedName, to int64, s streams) error {
	r, err := rollout.Undo(ctx, c, key, to)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.stdout, "RayService %s rolled back to revision %d (%s): the hub rolls it out as a spec change\n", key, r.Revision, r.Name)
	if note := r.TrafficNote(); note != "" {
		fmt.Fprintln(s.stdout, note)
	}
	fmt.Fprintln(s.stdout, "if a GitOps tool syncs this RayService, commit the same spec to its source, or it rolls the change forward again")
	return nil
}
