package spokebench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// SpokeUser is the identity of the measured operator's client certificate (the spoke's, or
// KubeRay's when it is measured instead); the audit policy records its writes only.
const SpokeUser = "rayfleet-spoke"

// Namespace holds the benchmark's objects.
const Namespace = "bench"

// Start starts the member control plane: a scheduler, f.Nodes fake Nodes with room for every
// Pod, the CRDs of crdDirs, the audit policy recording SpokeUser's writes, and the
// kube-controller-manager when controllerManager is set. The caller stops it.
func Start(ctx context.Context, f Flags, crdDirs []string, controllerManager bool) (*localcluster.Cluster, error) {
	podsPerNode := (f.Count*(f.Workers+1))/f.Nodes + 1
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		Scheduler:         true,
		ControllerManager: controllerManager,
		Nodes: localcluster.FakeNodes(f.Nodes, localcluster.NodeSpec{
			CPU: "100000", Memory: "100Ti", Pods: max(250, 2*podsPerNode),
		}),
		CRDDirs:     crdDirs,
		AuditPolicy: benchutil.AuditPolicy(SpokeUser, f.AuditLevel),
		KeepState:   f.Keep,
	})
	if err != nil {
		return nil, fmt.Errorf("starting the member control plane: %w", err)
	}
	if f.Keep {
		fmt.Fprintln(os.Stderr, "bench: state and logs in", cluster.Dir)
	}
	return cluster, nil
}

// CreateAll creates f.Count objects, newObject(i) for each, with f.Parallel concurrent creates,
// recording each one's creation time in tracker just before its request is sent. kind names
// the objects in errors.
func CreateAll(ctx context.Context, f Flags, c client.Client, tracker *benchutil.Readiness, kind string, newObject func(i int) client.Object) error {
	sem := make(chan struct{}, f.Parallel)
	errs := make([]error, f.Count)
	var wg sync.WaitGroup
	for i := range f.Count {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			obj := newObject(i)
			tracker.MarkCreated(obj.GetName(), time.Now())
			if err := c.Create(ctx, obj); err != nil {
				errs[i] = fmt.Errorf("creating %s %s: %w", kind, obj.GetName(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Wait is what WaitAllReady says when it gives up.
type Wait struct {
	// Exited is the error when the operator exits first.
	Exited string
	// Ready names the objects and their readiness after "only N of M ": "RayClusters ready".
	Ready string
}

// WaitAllReady waits until tracker has seen every object ready, the operator exits, f.Timeout
// since start passes or ctx ends.
func WaitAllReady(ctx context.Context, f Flags, tracker *benchutil.Readiness, operator *localcluster.Manager, start time.Time, w Wait) error {
	select {
	case <-tracker.AllDone():
		return nil
	case <-operator.Done():
		return errors.New(w.Exited)
	case <-time.After(f.Timeout - time.Since(start)):
		return fmt.Errorf("only %d of %d %s after %v", tracker.ReadyCount(), f.Count, w.Ready, f.Timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ComponentCPU is the CPU time of one control-plane component.
type ComponentCPU struct {
	Name string
	CPU  time.Duration
}

// ControlPlaneCPU is the CPU time of each of cluster's components whose usage can be read: on
// a small machine they compete with the operator for the same cores.
func ControlPlaneCPU(cluster *localcluster.Cluster) []ComponentCPU {
	var out []ComponentCPU
	for _, p := range cluster.Components() {
		if u, err := p.Usage(); err == nil {
			out = append(out, ComponentCPU{p.Name, u.CPU})
		}
	}
	return out
}
