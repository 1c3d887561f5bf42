//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/localfleet"
)

// rayClusterLabel marks the Pods of a RayCluster (KubeRay's ray.io/cluster).
const rayClusterLabel = "ray.io/cluster"

// ledger is every member workload (RayService, RayCluster, and each RayCluster's Pods) with
// its UID, taken before a fault. After recovery, a workload missing or carrying another UID
// (deleted and created again) is lost, unless the scenario said it may go: an upgrade's old
// RayCluster, say.
type ledger struct {
	uids map[string]types.UID
	// mayGo are key prefixes of workloads allowed to disappear.
	mayGo []string
}

// workloadKey names a workload across the fleet: member/kind/namespace/name, and a Pod under
// its RayCluster (member/Pod/namespace/cluster/pod) so that allowing a cluster to go allows
// its Pods too.
func workloadKey(member, kind, ns, name string) string {
	return strings.Join([]string{member, kind, ns, name}, "/")
}

// snapshot lists every member's workloads. A member that cannot be listed fails the test:
// a ledger must be complete to count losses.
func snapshot(ctx context.Context, t *testing.T, f *localfleet.Fleet) *ledger {
	t.Helper()
	uids, err := workloads(ctx, f)
	if err != nil {
		t.Fatalf("taking the ledger: %v", err)
	}
	return &ledger{uids: uids}
}

// allowGone lets a member's RayCluster (and its Pods) or RayService disappear.
func (l *ledger) allowGone(member, kind, ns, name string) {
	l.mayGo = append(l.mayGo, workloadKey(member, kind, ns, name))
	if kind == "RayCluster" {
		l.mayGo = append(l.mayGo, workloadKey(member, "Pod", ns, name)+"/")
	}
}

// lost lists the workloads of the ledger that are now gone or replaced, and not allowed to go.
func (l *ledger) lost(ctx context.Context, f *localfleet.Fleet) ([]string, error) {
	now, err := workloads(ctx, f)
	if err != nil {
		return nil, err
	}
	var out []string
	for key, uid := range l.uids {
		if now[key] == uid || slices.ContainsFunc(l.mayGo, func(p string) bool { return key == p || strings.HasPrefix(key, p) }) {
			continue
		}
		if now[key] == "" {
			out = append(out, key+" deleted")
		} else {
			out = append(out, key+" replaced")
		}
	}
	slices.Sort(out)
	return out, nil
}

// count checks the ledger at the end of a scenario: the losses go into the row (and fail the
// test through scenario), each one logged.
func (l *ledger) count(ctx context.Context, t *testing.T, f *localfleet.Fleet, r *Result) {
	t.Helper()
	gone, err := l.lost(ctx, f)
	if err != nil {
		t.Fatalf("checking the ledger: %v", err)
	}
	for _, g := range gone {
		t.Logf("lost: %s", g)
	}
	r.Lost = len(gone)
}

// workloads lists the RayServices, RayClusters and RayCluster Pods of every member.
func workloads(ctx context.Context, f *localfleet.Fleet) (map[string]types.UID, error) {
	out := map[string]types.UID{}
	for name, member := range f.Members {
		var services rayv1.RayServiceList
		if err := member.Client.List(ctx, &services); err != nil {
			return nil, fmt.Errorf("member %s: listing RayServices: %w", name, err)
		}
		for i := range services.Items {
			s := &services.Items[i]
			out[workloadKey(name, "RayService", s.Namespace, s.Name)] = s.UID
		}
		var clusters rayv1.RayClusterList
		if err := member.Client.List(ctx, &clusters); err != nil {
			return nil, fmt.Errorf("member %s: listing RayClusters: %w", name, err)
		}
		for i := range clusters.Items {
			c := &clusters.Items[i]
			out[workloadKey(name, "RayCluster", c.Namespace, c.Name)] = c.UID
		}
		var pods corev1.PodList
		if err := member.Client.List(ctx, &pods, client.HasLabels{rayClusterLabel}); err != nil {
			return nil, fmt.Errorf("member %s: listing Pods: %w", name, err)
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			out[workloadKey(name, "Pod", p.Namespace, p.Labels[rayClusterLabel]+"/"+p.Name)] = p.UID
		}
	}
	return out, nil
}
