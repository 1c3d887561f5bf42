package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// copyTracker records when each hub RayService's member copy first appeared, and where.
type copyTracker struct {
	placed *benchutil.Readiness
	mu     sync.Mutex
	member map[string]string // RayService name -> member holding its copy
}

func newCopyTracker(n int) *copyTracker {
	return &copyTracker{placed: benchutil.NewReadiness(n), member: map[string]string{}}
}

func (t *copyTracker) seen(name, member string, at time.Time) {
	t.mu.Lock()
	if _, ok := t.member[name]; !ok {
		t.member[name] = member
	}
	t.mu.Unlock()
	t.placed.MarkReady(name, at)
}

// memberOf returns the member holding name's copy.
func (t *copyTracker) memberOf(name string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.member[name]
	return m, ok
}

// on counts the copies on member.
func (t *copyTracker) on(member string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, m := range t.member {
		if m == member {
			n++
		}
	}
	return n
}

// perMember counts the copies by member.
func (t *copyTracker) perMember() map[string]int {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]int{}
	for _, m := range t.member {
		out[m]++
	}
	return out
}

// informOn starts an informer on the RayServices of benchNamespace in c calling observe for
// every add and update; it returns once the informer has synced.
func informOn(ctx context.Context, c *localcluster.Cluster, observe func(*rayv1.RayService)) error {
	ca, err := cache.New(c.Config, cache.Options{
		Scheme:            localcluster.Scheme,
		DefaultNamespaces: map[string]cache.Config{benchNamespace: {}},
	})
	if err != nil {
		return fmt.Errorf("creating RayService cache on %s: %w", c.Name, err)
	}
	inf, err := ca.GetInformer(ctx, &rayv1.RayService{})
	if err != nil {
		return fmt.Errorf("getting RayService informer on %s: %w", c.Name, err)
	}
	handle := func(obj any) {
		if rs, ok := obj.(*rayv1.RayService); ok {
			observe(rs)
		}
	}
	if _, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	}); err != nil {
		return fmt.Errorf("watching RayServices on %s: %w", c.Name, err)
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return fmt.Errorf("RayService cache on %s did not sync", c.Name)
	}
	return nil
}

// watchCopies marks each RayService placed the first time a copy of it shows on member.
func watchCopies(ctx context.Context, c *localcluster.Cluster, member string, t *copyTracker) error {
	return informOn(ctx, c, func(rs *rayv1.RayService) { t.seen(rs.Name, member, time.Now()) })
}

// watchHubReady marks a hub RayService ready the first time it shows a ready member: Ready
// True and serve endpoints counted.
func watchHubReady(ctx context.Context, hub *localcluster.Cluster, r *benchutil.Readiness) error {
	return informOn(ctx, hub, func(rs *rayv1.RayService) {
		if rs.Status.NumServeEndpoints > 0 && meta.IsStatusConditionTrue(rs.Status.Conditions, string(rayv1.RayServiceReady)) {
			r.MarkReady(rs.Name, time.Now())
		}
	})
}

// streamReady turns the member copies Ready one every cfg.statusInterval, as a spoke would,
// recording in hubStatus when each change was sent.
func streamReady(ctx context.Context, cfg config, b *bench, copies *copyTracker, hubStatus *benchutil.Readiness) error {
	ticker := time.NewTicker(cfg.statusInterval)
	defer ticker.Stop()
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range cfg.services {
		name := serviceName(i)
		member, ok := copies.memberOf(name)
		if !ok {
			return fmt.Errorf("no member copy of %s", name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-errs:
			return err
		case <-ticker.C:
		}
		// Each change in its own goroutine: a slow write must not delay the next one's send
		// time, which would make the pace, not the hub, decide the figures.
		wg.Go(func() {
			if err := markMemberReady(ctx, b.members[member].Client, name, hubStatus); err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// markMemberReady writes a Ready status for the current generation of the member copy name,
// recording the time just before the write.
func markMemberReady(ctx context.Context, c client.Client, name string, hubStatus *benchutil.Readiness) error {
	var rs rayv1.RayService
	if err := c.Get(ctx, client.ObjectKey{Namespace: benchNamespace, Name: name}, &rs); err != nil {
		return fmt.Errorf("reading member copy %s: %w", name, err)
	}
	now := metav1.Now()
	rs.Status.ObservedGeneration = rs.Generation
	rs.Status.NumServeEndpoints = 1
	rs.Status.ServiceStatus = rayv1.Running
	rs.Status.ActiveServiceStatus.RayClusterName = name + "-abcde"
	meta.SetStatusCondition(&rs.Status.Conditions, metav1.Condition{
		Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue, Reason: "NonZeroServeEndpoints",
		ObservedGeneration: rs.Generation, LastTransitionTime: now,
	})
	hubStatus.MarkCreated(name, time.Now())
	if err := c.Status().Update(ctx, &rs); err != nil {
		return fmt.Errorf("writing status of member copy %s: %w", name, err)
	}
	return nil
}
