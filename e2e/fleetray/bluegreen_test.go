//go:build e2e

package fleetray

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/e2e/internal/requests"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/rayapp"
)

// Timeouts: a head is a dozen Python processes' imports, 20 s idle and minutes on a loaded
// 2-core machine; a blue/green is a second head plus the shift.
const (
	firstAnswerTimeout = 8 * time.Minute
	blueGreenTimeout   = 8 * time.Minute
	poll               = time.Second
)

// The blue/green's tuning: short, for a test that waits for every step, yet long enough at 50 %
// for Traefik (which applies a route seconds after the gateway accepts it on a loaded machine)
// to route by it for shareMinAnswers answers.
const (
	stepPercent        = 50
	intervalSeconds    = 10
	retireAfterSeconds = 5
)

// TestBlueGreenOnRealRay places a hub RayService running the test Serve app on one of two
// members, asks it through the hub's Gateway the whole time, changes the app's version and
// waits until the blue/green has brought it up on the other member, shifted the traffic there
// and retired the first: every answer must be Ray Serve's, none may fail, the last ones name
// the new version from the other member.
func TestBlueGreenOnRealRay(t *testing.T) {
	const ns, name = "fleetray", "versioned"
	serveService := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	f, created := setUp(t, ns, name, policySpec(), serveService)
	url := f.GatewayURL + "/"
	blue, firstRevision := firstServed(t, f, ns, name, created)
	logHeadMemory(t, f, blue, ns)

	reqs := startRequests(t, url)
	shares := recordShares(t, f, ns, name)
	changed := time.Now()
	setServeConfig(t, f, ns, name, rayapp.ServeConfig("v2"))
	green := waitGreen(t, f, ns, name, blue)
	waitRetired(t, f, ns, name, green, firstRevision)
	retired := time.Now()
	logHeadMemory(t, f, green, ns)
	// A few answers after the retirement: green alone serves v2.
	eventuallyFor(t, f, time.Minute, func(g gomega.Gomega) {
		g.Expect(len(reqs.Between(retired, time.Now()))).To(gomega.BeNumerically(">=", 10))
	})
	reqs.Close()
	checkShares(t, shares.stop(), reqs, green)

	all := reqs.Between(time.Time{}, time.Now())
	var failed []answer
	slow := 0
	firstV2, lastV1 := time.Time{}, time.Time{}
	for _, a := range all {
		if a.Took > slowAnswer {
			slow++
		}
		switch {
		case a.Failed():
			failed = append(failed, a)
		case a.Value.version == "v2" && a.Value.cluster == green:
			if firstV2.IsZero() {
				firstV2 = a.Sent
			}
		case a.Value.version == "v1" && a.Value.cluster == blue:
			lastV1 = a.Sent
		default:
			t.Errorf("answer not v1 from %s nor v2 from %s: %s", blue, green, a)
		}
	}
	t.Logf("%d requests through the Gateway during the blue/green, %d failed, %d slower than %s; first v2 %s and last v1 %s after the change; blue retired %s after it",
		len(all), len(failed), slow, slowAnswer, sinceOrNever(firstV2, changed), sinceOrNever(lastV1, changed), retired.Sub(changed).Round(time.Second))
	for i, a := range failed {
		if i == 20 {
			t.Errorf("… and %d more", len(failed)-20)
			break
		}
		t.Errorf("failed: %s", a)
	}
	for _, a := range reqs.Between(retired, time.Now()) {
		if a.Failed() || a.Value.version != "v2" || a.Value.cluster != green {
			t.Errorf("after blue retired, want v2 from %s: %s", green, a)
		}
	}
}

// firstServed waits until the Gateway answers v1 at / and ns/name's first revision is good
// on one member, and returns the member and the revision.
func firstServed(t *testing.T, f *localfleet.Fleet, ns, name string, created time.Time) (blue, revision string) {
	t.Helper()
	return firstServedAt(t, f, ns, name, "/", created)
}

// firstServedAt is firstServed for a RayService routed at path.
func firstServedAt(t *testing.T, f *localfleet.Fleet, ns, name, path string, created time.Time) (blue, revision string) {
	t.Helper()
	eventuallyFor(t, f, firstAnswerTimeout, func(g gomega.Gomega) {
		a := requests.Get(t.Context(), f.GatewayURL+path, gatewayRequests)
		g.Expect(a.Err).NotTo(gomega.HaveOccurred())
		g.Expect(a.Value.version).To(gomega.Equal("v1"))
	})
	t.Logf("first answer through the Gateway at %s %s after the RayService was created", path, time.Since(created).Round(time.Second))
	eventuallyFor(t, f, firstAnswerTimeout, func(g gomega.Gomega) {
		b := binding(g, f, ns, name)
		g.Expect(b.Spec.Clusters).To(gomega.HaveLen(1), "placed clusters")
		ro := b.Status.Rollout
		g.Expect(ro).NotTo(gomega.BeNil(), "status.rollout")
		g.Expect(ro.Phase).To(gomega.Equal(fleetv1alpha1.RolloutComplete), "rollout: %s", ro.Message)
		g.Expect(ro.GoodRevision).To(gomega.Equal(ro.TargetRevision), "good revision")
		blue, revision = b.Spec.Clusters[0], ro.GoodRevision
	})
	t.Logf("revision %s good on %s %s after creation", revision, blue, time.Since(created).Round(time.Second))
	return blue, revision
}

// waitGreen waits until ns/name's blue/green has a green member, other than blue, and returns it.
func waitGreen(t *testing.T, f *localfleet.Fleet, ns, name, blue string) string {
	t.Helper()
	var green string
	eventuallyFor(t, f, blueGreenTimeout, func(g gomega.Gomega) {
		b := binding(g, f, ns, name)
		g.Expect(b.Status.Rollout).NotTo(gomega.BeNil())
		bg := b.Status.Rollout.BlueGreen
		g.Expect(bg).NotTo(gomega.BeNil(), "status.rollout.blueGreen: %s", b.Status.Rollout.Message)
		g.Expect(bg.Green).To(gomega.HaveLen(1), "green")
		green = bg.Green[0]
	})
	if green == blue {
		t.Fatalf("green is %s, blue's member too", green)
	}
	t.Logf("green is %s, blue %s", green, blue)
	return green
}

// waitRetired waits until ns/name's blue/green is over with green alone placed and holding a
// copy, on a revision other than previous.
func waitRetired(t *testing.T, f *localfleet.Fleet, ns, name, green, previous string) {
	t.Helper()
	eventuallyFor(t, f, blueGreenTimeout, func(g gomega.Gomega) {
		b := binding(g, f, ns, name)
		ro := b.Status.Rollout
		g.Expect(ro).NotTo(gomega.BeNil(), "status.rollout")
		g.Expect(ro.Phase).To(gomega.Equal(fleetv1alpha1.RolloutComplete), "rollout: %s", ro.Message)
		g.Expect(ro.BlueGreen).To(gomega.BeNil(), "blue/green still in flight: %s", ro.Message)
		g.Expect(ro.GoodRevision).NotTo(gomega.Equal(previous), "good revision")
		g.Expect(b.Spec.Clusters).To(gomega.Equal([]string{green}), "placed clusters")
		g.Expect(holders(g, f, ns, name)).To(gomega.Equal([]string{green}), "members holding a copy")
	})
}

// policySpec places on one member and changes it by a blue/green on the other, routed through
// the fleet's Gateway at /; no soak, so that the first revision is good once it is done.
func policySpec() fleetv1alpha1.PlacementPolicySpec {
	return fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](1),
		Rollout: &fleetv1alpha1.RolloutStrategy{
			Type:        fleetv1alpha1.RolloutBlueGreen,
			SoakSeconds: ptr.To[int32](0),
			BlueGreen: &fleetv1alpha1.BlueGreenStrategy{
				StepPercent:        ptr.To[int32](stepPercent),
				IntervalSeconds:    ptr.To[int32](intervalSeconds),
				RetireAfterSeconds: ptr.To[int32](retireAfterSeconds),
			},
		},
		Traffic: &fleetv1alpha1.TrafficSpec{
			ParentRef:  fleetv1alpha1.TrafficParentRef{Namespace: localfleet.GatewayNamespace, Name: localfleet.GatewayName},
			PathPrefix: "/",
		},
	}
}

// sinceOrNever is t's time after since, or "never".
func sinceOrNever(t, since time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Sub(since).Round(100 * time.Millisecond).String()
}

// versionOf decodes the test app's answer.
func versionOf(body []byte) (string, error) {
	var v struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Version == "" {
		return "", fmt.Errorf("not the test app's answer (%q): %v", body, err)
	}
	return v.Version, nil
}
