//go:build e2e

package fleetray

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/chaos"
	"github.com/rayfleet/rayfleet/e2e/internal/traefik"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/rayapp"
)

// TestGreenFailsOnRealRay's bounds. greenOffWithin is from the kill to Traefik routing without
// green: the hub's probe needs two failures 2 s apart and a reconcile (hub/ROLLOUTS.md), and
// Traefik applies a route seconds after the gateway accepts it on a loaded machine. The progress
// deadline is far beyond a head's restart, so that green heals rather than the shift reverting
// (the revert on the deadline is e2e/bluegreen's TestBlueGreenGreenEndpointFails).
const (
	greenOffWithin    = 20 * time.Second
	greenFailDeadline = 10 * time.Minute
	headBackWithin    = 6 * time.Minute
)

// TestGreenFailsOnRealRay is chaos row 10 on real Ray. Mid-shift, green's Ray head is killed
// (SIGKILL to its container's main process on green's real Node) while green's API server and
// spoke run on. The hub's probe of green's serve address finds it failing and takes green's
// weight off, the shift pausing with TrafficShifting naming green (the probe's verdict or the
// spoke's report, whichever reaches the hub first); the kubelet restarts the
// head, the spoke submits the Serve config again (Ray lost it with the head), and once Ray
// serves green gets its share back and the shift completes. Requests may fail only from the
// kill until Traefik routes without green; no copy is replaced.
func TestGreenFailsOnRealRay(t *testing.T) {
	const ns, name = "fleetray-fail", "failing"
	spec := policySpec()
	spec.Rollout.ProgressDeadlineSeconds = ptr.To(int32(greenFailDeadline / time.Second))
	serveService := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	f, created := setUp(t, ns, name, spec, serveService)
	blue, firstRevision := firstServed(t, f, ns, name, created)

	reqs := startRequests(t, f.GatewayURL+"/")
	changed := time.Now()
	setServeConfig(t, f, ns, name, rayapp.ServeConfig("v2"))
	green := waitGreen(t, f, ns, name, blue)
	split := waitRouted(t, f, ns, name, green, "a split", headBackWithin, func(share int32) bool { return share > 0 && share < 100 })
	uids := copyUIDs(t, f, ns, name, blue, green)
	head := headPod(t, f, green, ns)
	restarts := restartCount(head)

	kill := time.Now()
	killContainer(t, f, green, head)
	t.Logf("green %s's head %s killed %s after the split was routed", green, head.Name, kill.Sub(split).Round(time.Millisecond))
	off := waitRouted(t, f, ns, name, green, "no share", greenOffWithin+time.Minute, func(share int32) bool { return share == 0 })
	if off.Sub(kill) > greenOffWithin {
		t.Errorf("Traefik routed without green %v after its head was killed, want within %v", off.Sub(kill).Round(time.Millisecond), greenOffWithin)
	}
	paused, pausedWhy := waitPaused(t, f, ns, name, green)
	t.Logf("TrafficShifting %v after the kill: %s", paused.Sub(kill).Round(time.Millisecond), pausedWhy)
	back := waitRouted(t, f, ns, name, green, "its share back", headBackWithin, func(share int32) bool { return share > 0 })
	expectCopies(t, f, ns, name, uids)
	expectHeadRestarted(t, f, green, ns, head, restarts)
	waitRetired(t, f, ns, name, green, firstRevision)
	reqs.Close()

	windowEnd := off.Add(appliedMargin)
	var inWindow, outside int
	for _, a := range reqs.All() {
		switch {
		case !a.Failed():
		// A request still waiting for its answer when the head died is lost with it, however
		// shortly before the kill it was sent.
		case !a.Sent.Add(a.Took).Before(kill) && a.Sent.Before(windowEnd):
			inWindow++
		default:
			outside++
			if outside <= 20 {
				t.Errorf("failed outside [in flight at the kill, routed without green + %v]: %s", appliedMargin, a)
			}
		}
	}
	t.Logf("green %s killed at %s; routed without it %s", green, kill.Format("15:04:05.000"), off.Format("15:04:05.000"))
	t.Log(chaos.FigureLine("fleetray-greenfail", "off_routed", off.Sub(kill), "paused_seen", paused.Sub(kill),
		"share_back", back.Sub(kill), "shift_done", time.Since(changed), "requests", len(reqs.All()),
		"failed_in_window", inWindow, "window", windowEnd.Sub(kill), "failed_outside", outside))
	if outside > 0 {
		t.Errorf("%d requests failed outside the window", outside)
	}
}

// waitRouted waits until Traefik routes ns/name with a share of green that ok accepts (what,
// in messages) and returns when it was first seen doing so.
func waitRouted(t *testing.T, f *localfleet.Fleet, ns, name, green, what string, within time.Duration, ok func(share int32) bool) time.Time {
	t.Helper()
	byBackend := backendsOf(name)
	var seen time.Time
	last := "nothing read"
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		if err := f.Exited(); err != nil {
			gomega.StopTrying(err.Error()).Now()
		}
		w, err := traefik.Applied(t.Context(), f.GatewayAdminURL, ns, name, byBackend)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		last = fmt.Sprint(w)
		g.Expect(ok(shareOf(w, green))).To(gomega.BeTrue(), "green %s's share in %v", green, w)
		seen = time.Now()
	}).WithTimeout(within).WithPolling(sharePoll).Should(gomega.Succeed(), "Traefik routing %s to green %s (last %s)", what, green, last)
	return seen
}

// waitPaused waits until the hub RayService's TrafficShifting says the shift paused on green,
// and returns when and why. Why depends on which the hub learns first: its probe finding the
// serve endpoint failing, or green's spoke reporting the copy without serve endpoints.
func waitPaused(t *testing.T, f *localfleet.Fleet, ns, name, green string) (time.Time, string) {
	t.Helper()
	var why string
	eventuallyFor(t, f, time.Minute, func(g gomega.Gomega) {
		var rs rayv1.RayService
		g.Expect(f.Hub.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs)).To(gomega.Succeed())
		c := meta.FindStatusCondition(rs.Status.Conditions, fleetv1alpha1.ConditionTrafficShifting)
		g.Expect(c).NotTo(gomega.BeNil(), "TrafficShifting")
		g.Expect(c.Reason).To(gomega.Equal(fleetv1alpha1.ReasonShiftPaused), "TrafficShifting: %s", c.Message)
		g.Expect(c.Message).To(gomega.ContainSubstring(green), "TrafficShifting")
		why = c.Message
	})
	return time.Now(), why
}

// headPod is the one head Pod of ns on member.
func headPod(t *testing.T, f *localfleet.Fleet, member, ns string) *corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := f.Members[member].Client.List(t.Context(), &pods, client.InNamespace(ns), client.MatchingLabels{"ray.io/node-type": "head"}); err != nil {
		t.Fatalf("listing head Pods on %s: %v", member, err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d head Pods in %s on %s, want 1", len(pods.Items), ns, member)
	}
	return &pods.Items[0]
}

// restartCount is how often the first container of pod restarted.
func restartCount(pod *corev1.Pod) int32 {
	if len(pod.Status.ContainerStatuses) == 0 {
		return 0
	}
	return pod.Status.ContainerStatuses[0].RestartCount
}

// killContainer kills the first container of pod on member's real Node with SIGKILL to its
// main process, which takes every process of the container's PID namespace with it.
func killContainer(t *testing.T, f *localfleet.Fleet, member string, pod *corev1.Pod) {
	t.Helper()
	if len(pod.Status.ContainerStatuses) == 0 || pod.Status.ContainerStatuses[0].ContainerID == "" {
		t.Fatalf("head %s on %s has no running container", pod.Name, member)
	}
	pid, err := f.Members[member].ContainerPID(pod.Status.ContainerStatuses[0].ContainerID)
	if err != nil {
		t.Fatalf("finding head %s's process on %s: %v", pod.Name, member, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing head %s (pid %d) on %s: %v", pod.Name, pid, member, err)
	}
}

// expectHeadRestarted checks that the kill restarted the head's container or replaced its Pod,
// rather than going unnoticed.
func expectHeadRestarted(t *testing.T, f *localfleet.Fleet, member, ns string, before *corev1.Pod, restarts int32) {
	t.Helper()
	now := headPod(t, f, member, ns)
	if now.UID == before.UID && restartCount(now) <= restarts {
		t.Errorf("head %s on %s neither restarted (restarts %d) nor replaced after the kill", now.Name, member, restartCount(now))
		return
	}
	t.Logf("head on %s after the kill: Pod %s, restarts %d (Pod %s, restarts %d before)", member, now.Name, restartCount(now), before.Name, restarts)
}

// copyUIDs are the UIDs of the members' copies of ns/name.
func copyUIDs(t *testing.T, f *localfleet.Fleet, ns, name string, members ...string) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, m := range members {
		var rs rayv1.RayService
		if err := f.Members[m].Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &rs); err != nil {
			t.Fatalf("reading the copy on %s: %v", m, err)
		}
		out[m] = rs.UID
	}
	return out
}

// expectCopies checks that every member in uids still holds the copy it had.
func expectCopies(t *testing.T, f *localfleet.Fleet, ns, name string, uids map[string]types.UID) {
	t.Helper()
	now := copyUIDs(t, f, ns, name, slices.Sorted(maps.Keys(uids))...)
	for m, uid := range uids {
		if now[m] != uid {
			t.Errorf("the copy on %s was replaced: UID %s, was %s", m, now[m], uid)
		}
	}
}
