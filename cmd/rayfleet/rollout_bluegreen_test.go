package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// blueGreenPolicy rolls out BlueGreen with both approvals.
func (h *rolloutHub) blueGreenPolicy(t *testing.T) {
	t.Helper()
	p := &fleetv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: rolloutNamespace, Name: "bluegreen"},
		Spec: fleetv1alpha1.PlacementPolicySpec{Rollout: &fleetv1alpha1.RolloutStrategy{
			Type: fleetv1alpha1.RolloutBlueGreen, BlueGreen: &fleetv1alpha1.BlueGreenStrategy{Approval: true},
		}},
	}
	if err := client.IgnoreAlreadyExists(h.c.Create(t.Context(), p)); err != nil {
		t.Fatal(err)
	}
}

// greenDeployed is RayService name rolling out revision 3 BlueGreen: blue eu and us serve
// revision 2 with all of the traffic, green ap is done on revision 3, and the rollout waits for
// the shift approval.
func greenDeployed(name string) fleetv1alpha1.RayServiceBindingStatus {
	start := metav1.NewTime(now.Add(-5 * time.Minute))
	cluster := func(c string, n int, color fleetv1alpha1.Color, weight int32, address string) fleetv1alpha1.ClusterStatus {
		cs := clusterAt(name, c, n, fleetv1alpha1.ClusterDone, time.Minute, "RunningAll")
		cs.Color, cs.Weight, cs.ServeAddress = color, ptr.To(weight), address
		return cs
	}
	return fleetv1alpha1.RayServiceBindingStatus{
		Rollout: &fleetv1alpha1.RolloutStatus{
			TargetRevision: revisionName(name, 3), GoodRevision: revisionName(name, 2), StartTime: &start,
			Phase: fleetv1alpha1.RolloutAwaitingApproval, Stage: fleetv1alpha1.BlueGreenShiftStage,
			Message: "blue eu,us 100% → green ap 0%: the first traffic step waits for `rayfleet rollout approve`",
			BlueGreen: &fleetv1alpha1.BlueGreenStatus{Step: fleetv1alpha1.BlueGreenDeploying, Blue: []string{"eu", "us"},
				Green: []string{"ap"}, StepTime: &start},
		},
		Clusters: []fleetv1alpha1.ClusterStatus{
			cluster("ap", 3, fleetv1alpha1.ColorGreen, 0, "10.99.0.3:8000"),
			cluster("eu", 2, fleetv1alpha1.ColorBlue, 5000, "10.99.0.2:8000"),
			cluster("us", 2, fleetv1alpha1.ColorBlue, 5000, "10.99.0.1:8000"),
		},
	}
}

// setTrafficShifting sets the hub RayService's TrafficShifting condition, as the hub does after
// it writes the binding.
func (h *rolloutHub) setTrafficShifting(t *testing.T, name string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	svc := h.getRayService(t, name)
	meta.SetStatusCondition(&svc.Status.Conditions, metav1.Condition{Type: fleetv1alpha1.ConditionTrafficShifting,
		Status: status, Reason: reason, Message: message, ObservedGeneration: svc.Generation})
	if err := h.c.Status().Update(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
}

// testBlueGreen shows, approves, follows and undoes a BlueGreen rollout with traffic.
func (h *rolloutHub) testBlueGreen(t *testing.T) {
	h.blueGreenPolicy(t)
	h.place(t, "bg", 3, nil, fleetv1alpha1.RayServiceBindingStatus{})
	var b fleetv1alpha1.RayServiceBinding
	if err := h.c.Get(t.Context(), client.ObjectKey{Namespace: rolloutNamespace, Name: "bg"}, &b); err != nil {
		t.Fatal(err)
	}
	b.Spec = fleetv1alpha1.RayServiceBindingSpec{Clusters: []string{"us", "eu", "ap"}, PolicyName: "bluegreen"}
	if err := h.c.Update(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	h.updateRollout(t, "bg", func(s *fleetv1alpha1.RayServiceBindingStatus) { *s = greenDeployed("bg") })
	h.setTrafficShifting(t, "bg", metav1.ConditionTrue, fleetv1alpha1.ReasonShiftPaused, "blue eu,us 100% → green ap 0%: waits for approval")

	stdout, stderr, code := h.run(t, "status", "serve/bg")
	for _, want := range []string{
		"\nPhase:     AwaitingApproval (stage shift)\n",
		"\nStep:      Deploying for 5m (green 0%)\nBlue:      eu,us\nGreen:     ap\n",
		"\nTraffic:   TrafficShifting=True (ShiftPaused): blue eu,us 100% → green ap 0%: waits for approval\n",
		"\nCOLOR   CLUSTER   REVISION   PHASE   WEIGHT   ADDRESS          REASON\n" +
			"Blue    eu        2          Done    50%      10.99.0.2:8000   RunningAll\n" +
			"Blue    us        2          Done    50%      10.99.0.1:8000   RunningAll\n" +
			"Green   ap        3          Done    0%       10.99.0.3:8000   RunningAll\n",
	} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("status: code %d, stderr %q, stdout:\n%s\nwant it to contain:\n%s", code, stderr, stdout, want)
		}
	}

	h.testBlueGreenApprove(t)
	h.testBlueGreenWatch(t)

	// Undo while green has 60%: the good revision's spec goes back, and the traffic to blue.
	h.updateRollout(t, "bg", func(s *fleetv1alpha1.RayServiceBindingStatus) {
		s.Rollout.Phase, s.Rollout.Stage = fleetv1alpha1.RolloutProgressing, ""
		s.Rollout.BlueGreen.Step, s.Rollout.BlueGreen.GreenPercent = fleetv1alpha1.BlueGreenShifting, 60
	})
	stdout, stderr, code = h.run(t, "undo", "serve/bg")
	want := "RayService serve/bg rolled back to revision 2 (bg-0000000002): the hub rolls it out as a spec change\n" +
		"a blue/green rollout was in flight (step Shifting): the hub sends all of the traffic back to blue eu,us at once " +
		"(green has 60% now), and green ap leaves\n"
	if code != 0 || !strings.HasPrefix(stdout, want) {
		t.Errorf("undo: code %d, stderr %q, stdout:\n%s\nwant it to start with:\n%s", code, stderr, stdout, want)
	}
	if got := h.getRayService(t, "bg").Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image; got != images[1] {
		t.Errorf("undo left image %s, want %s", got, images[1])
	}
}

// testBlueGreenApprove approves shift (awaited, then named again), refuses promote while shift
// waits, then approves the awaited promote.
func (h *rolloutHub) testBlueGreenApprove(t *testing.T) {
	steps := []struct {
		name, wantApproval, wantOut string
		args                        []string
		awaitPromote                bool
		wantCode                    int
	}{
		{name: "promote before the awaited shift", args: []string{"--stage", "promote"}, wantCode: 1,
			wantOut: "rayfleet rollout approve: nothing awaits approval: the BlueGreen rollout of RayService serve/bg to revision 3 " +
				"(bg-0000000003) awaits approval of stage shift first; approve that (the binding holds one approval at a time)\n"},
		{name: "the awaited shift", wantApproval: "bg-0000000003/shift",
			wantOut: "approved stage shift of RayService serve/bg (fleet.rayfleet.io/approved-stage=bg-0000000003/shift): " +
				"the hub starts it when the rollout reaches it\n"},
		{name: "shift, named", args: []string{"--stage", "shift"}, wantApproval: "bg-0000000003/shift",
			wantOut: "stage shift of RayService serve/bg is approved already (fleet.rayfleet.io/approved-stage=bg-0000000003/shift)\n"},
		{name: "the awaited promote", awaitPromote: true, args: []string{"--stage", "promote"}, wantApproval: "bg-0000000003/promote",
			wantOut: "approved stage promote of RayService serve/bg (fleet.rayfleet.io/approved-stage=bg-0000000003/promote)"},
		{name: "promote again, unnamed", wantApproval: "bg-0000000003/promote",
			wantOut: "stage promote of RayService serve/bg is approved already"},
	}
	for _, step := range steps {
		if step.awaitPromote {
			h.updateRollout(t, "bg", func(s *fleetv1alpha1.RayServiceBindingStatus) {
				s.Rollout.Stage = fleetv1alpha1.BlueGreenPromoteStage
				s.Rollout.BlueGreen.Step, s.Rollout.BlueGreen.GreenPercent = fleetv1alpha1.BlueGreenShifting, 80
			})
		}
		stdout, stderr, code := h.run(t, append([]string{"approve", "serve/bg"}, step.args...)...)
		out := stdout
		if step.wantCode != 0 {
			out = stderr
		}
		if code != step.wantCode || !strings.Contains(out, step.wantOut) {
			t.Errorf("%s: code %d, stdout %q, stderr %q; want code %d and %q", step.name, code, stdout, stderr, step.wantCode, step.wantOut)
		}
		var b fleetv1alpha1.RayServiceBinding
		if err := h.c.Get(t.Context(), client.ObjectKey{Namespace: rolloutNamespace, Name: "bg"}, &b); err != nil {
			t.Fatal(err)
		}
		if got := b.Annotations[labels.ApprovedStage]; got != step.wantApproval {
			t.Errorf("%s: approval %q, want %q", step.name, got, step.wantApproval)
		}
	}
}

// testBlueGreenWatch follows the rollout while only the hub RayService's TrafficShifting
// changes (the hub writes it after the binding): the watch prints it, and ends on Complete.
func (h *rolloutHub) testBlueGreenWatch(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*waitTimeout)
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		args := []string{"rollout", "status", "serve/bg", "--watch", "--hub-kubeconfig", h.file}
		done <- runWith(ctx, args, streams{IOStreams: genericiooptions.IOStreams{Out: &stdout, ErrOut: &stderr}, clock: clocktesting.NewFakePassiveClock(now)})
	}()
	g.Eventually(stdout.String).WithTimeout(waitTimeout).Should(gomega.ContainSubstring("Green   ap        3"))
	h.setTrafficShifting(t, "bg", metav1.ConditionTrue, fleetv1alpha1.ReasonShiftPaused, "green taking all of the traffic waits for approval")
	g.Eventually(stdout.String).WithTimeout(waitTimeout).Should(gomega.ContainSubstring(
		"\nTraffic:   TrafficShifting=True (ShiftPaused): green taking all of the traffic waits for approval\n"))

	h.updateRollout(t, "bg", func(s *fleetv1alpha1.RayServiceBindingStatus) { s.Rollout.Phase = fleetv1alpha1.RolloutComplete })
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("watch until Complete: exit code %d, stderr %q", code, stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("watch did not end on Complete; stdout:\n%s", stdout.String())
	}
}
