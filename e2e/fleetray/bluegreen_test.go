//go:build e2e

package fleetray

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/internal/realnode"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// Timeouts: a head is a dozen Python processes' imports, 20 s idle and minutes on a loaded
// 2-core machine; a blue/green is a second head plus the shift.
const (
	firstAnswerTimeout = 8 * time.Minute
	blueGreenTimeout   = 8 * time.Minute
	poll               = time.Second
)

// The blue/green's tuning: short, for a test that waits for every step.
const (
	stepPercent        = 50
	intervalSeconds    = 5
	retireAfterSeconds = 5
)

// TestBlueGreenOnRealRay places a hub RayService running the test Serve app on one of two
// members, asks it through the hub's Gateway the whole time, changes the app's version and
// waits until the blue/green has brought it up on the other member, shifted the traffic there
// and retired the first: every answer must be Ray Serve's, none may fail, the last ones name
// the new version from the other member.
func TestBlueGreenOnRealRay(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	f := startFleet(t)
	g := gomega.NewWithT(t)
	ctx := t.Context()
	const ns, name = "fleetray", "versioned"
	for _, c := range append([]*localcluster.Cluster{f.Hub}, memberClusters(f)...) {
		g.Expect(c.CreateNamespace(ctx, ns)).To(gomega.Succeed())
	}
	// The app's code is mounted from a ConfigMap the hub does not copy: each member has its own,
	// in a namespace the member's admin made and lets the hub into.
	for _, c := range memberClusters(f) {
		nsObj := &corev1.Namespace{}
		g.Expect(c.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(gomega.Succeed())
		// The member's guard also wants Pod Security at baseline at least where it places.
		nsObj.Labels = map[string]string{
			labels.HubNamespace:                  labels.HubNamespaceAllowed,
			"pod-security.kubernetes.io/enforce": "baseline",
		}
		g.Expect(c.Client.Update(ctx, nsObj)).To(gomega.Succeed())
		g.Expect(c.Client.Create(ctx, realnode.ServeAppConfigMap(t, ns))).To(gomega.Succeed())
	}
	pp := &fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "blue-green"}, Spec: policySpec()}
	g.Expect(f.Hub.Client.Create(ctx, pp)).To(gomega.Succeed())
	rs := &rayv1.RayService{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{labels.PlacementPolicy: pp.Name}},
		Spec: rayv1.RayServiceSpec{
			ServeConfigV2:  realnode.ServeConfig("v1"),
			RayClusterSpec: realnode.ClusterSpec(realnode.Ray(t).Name),
			ServeService:   &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}},
		},
	}
	created := time.Now()
	g.Expect(f.Hub.Client.Create(ctx, rs)).To(gomega.Succeed())

	url := f.GatewayURL + "/"
	probe := newRequester(url)
	eventuallyFor(t, f, firstAnswerTimeout, func(g gomega.Gomega) {
		a := probe.get(ctx)
		g.Expect(a.err).NotTo(gomega.HaveOccurred())
		g.Expect(a.version).To(gomega.Equal("v1"))
	})
	t.Logf("first answer through the Gateway %s after the RayService was created", time.Since(created).Round(time.Second))
	var blue, firstRevision string
	eventuallyFor(t, f, firstAnswerTimeout, func(g gomega.Gomega) {
		b := binding(g, f, ns, name)
		g.Expect(b.Spec.Clusters).To(gomega.HaveLen(1), "placed clusters")
		ro := b.Status.Rollout
		g.Expect(ro).NotTo(gomega.BeNil(), "status.rollout")
		g.Expect(ro.Phase).To(gomega.Equal(fleetv1alpha1.RolloutComplete), "rollout: %s", ro.Message)
		g.Expect(ro.GoodRevision).To(gomega.Equal(ro.TargetRevision), "good revision")
		blue, firstRevision = b.Spec.Clusters[0], ro.GoodRevision
	})
	t.Logf("revision %s good on %s %s after creation", firstRevision, blue, time.Since(created).Round(time.Second))
	logHeadMemory(t, f, blue, ns)

	requests := startRequests(t, url)
	changed := time.Now()
	setServeConfig(t, f, ns, name, realnode.ServeConfig("v2"))
	var green string
	eventuallyFor(t, f, blueGreenTimeout, func(g gomega.Gomega) {
		b := binding(g, f, ns, name)
		g.Expect(b.Status.Rollout).NotTo(gomega.BeNil())
		bg := b.Status.Rollout.BlueGreen
		g.Expect(bg).NotTo(gomega.BeNil(), "status.rollout.blueGreen: %s", b.Status.Rollout.Message)
		g.Expect(bg.Green).To(gomega.HaveLen(1), "green")
		green = bg.Green[0]
	})
	g.Expect(green).NotTo(gomega.Equal(blue), "green is another member than blue")
	t.Logf("green is %s, blue %s", green, blue)
	eventuallyFor(t, f, blueGreenTimeout, func(g gomega.Gomega) {
		b := binding(g, f, ns, name)
		ro := b.Status.Rollout
		g.Expect(ro).NotTo(gomega.BeNil(), "status.rollout")
		g.Expect(ro.Phase).To(gomega.Equal(fleetv1alpha1.RolloutComplete), "rollout: %s", ro.Message)
		g.Expect(ro.BlueGreen).To(gomega.BeNil(), "blue/green still in flight: %s", ro.Message)
		g.Expect(ro.GoodRevision).NotTo(gomega.Equal(firstRevision), "good revision")
		g.Expect(b.Spec.Clusters).To(gomega.Equal([]string{green}), "placed clusters")
		g.Expect(holders(g, f, ns, name)).To(gomega.Equal([]string{green}), "members holding a copy")
	})
	retired := time.Now()
	logHeadMemory(t, f, green, ns)
	// A few answers after the retirement: green alone serves v2.
	eventuallyFor(t, f, time.Minute, func(g gomega.Gomega) {
		g.Expect(len(requests.between(retired, time.Now()))).To(gomega.BeNumerically(">=", 10))
	})
	requests.close()

	all := requests.between(time.Time{}, time.Now())
	var failed []answer
	firstV2, lastV1 := time.Time{}, time.Time{}
	for _, a := range all {
		switch {
		case a.failed():
			failed = append(failed, a)
		case a.version == "v2" && a.cluster == green:
			if firstV2.IsZero() {
				firstV2 = a.sent
			}
		case a.version == "v1" && a.cluster == blue:
			lastV1 = a.sent
		default:
			t.Errorf("answer not v1 from %s nor v2 from %s: %s", blue, green, a)
		}
	}
	t.Logf("%d requests through the Gateway during the blue/green, %d failed; first v2 %s and last v1 %s after the change; blue retired %s after it",
		len(all), len(failed), sinceOrNever(firstV2, changed), sinceOrNever(lastV1, changed), retired.Sub(changed).Round(time.Second))
	for i, a := range failed {
		if i == 10 {
			t.Errorf("… and %d more", len(failed)-10)
			break
		}
		t.Errorf("failed: %s", a)
	}
	for _, a := range requests.between(retired, time.Now()) {
		if a.failed() || a.version != "v2" || a.cluster != green {
			t.Errorf("after blue retired, want v2 from %s: %s", green, a)
		}
	}
}

// startFleet starts the hub (with Traefik and the Gateway) and the two members, each with a
// real Node holding the pause and Ray images, and waits until the hub finds both Ready.
func startFleet(t *testing.T) *localfleet.Fleet {
	t.Helper()
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Fatal(err)
	}
	specs := make([]localfleet.MemberSpec, 0, len(members))
	for _, m := range members {
		specs = append(specs, localfleet.MemberSpec{Name: m, Labels: map[string]string{regionKey: m}})
	}
	pause, ray := realnode.Pause(t), realnode.Ray(t)
	start := time.Now()
	f, err := localfleet.Start(t.Context(), localfleet.Options{
		Members:   specs,
		KeepState: os.Getenv("RAYFLEET_E2E_KEEP") != "",
		Traffic:   &localfleet.TrafficOptions{ServeIPs: serveIPs},
		RealNodes: &localfleet.RealNodes{
			Images:       []string{pause.Archive, ray.Archive},
			SandboxImage: pause.Name,
			Runc:         runc,
			Ray:          true,
		},
	})
	if err != nil {
		t.Fatalf("starting the fleet: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			f.DumpLogs(os.Stderr, 80)
		}
		stop := time.Now()
		f.Stop()
		t.Logf("fleet stopped in %s (state in %s)", time.Since(stop).Round(time.Millisecond), f.Dir)
	})
	eventuallyFor(t, f, 2*time.Minute, func(g gomega.Gomega) {
		for _, m := range members {
			var mc fleetv1alpha1.MemberCluster
			g.Expect(f.Hub.Client.Get(t.Context(), client.ObjectKey{Name: m}, &mc)).To(gomega.Succeed())
			g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, fleetv1alpha1.ConditionReady)).To(gomega.BeTrue(), "%s Ready", m)
		}
	})
	t.Logf("hub, Traefik and %d members with real Nodes up and Ready in %s (gateway %s)",
		len(f.Members), time.Since(start).Round(time.Second), f.GatewayURL)
	return f
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

// setServeConfig sets the hub RayService's serveConfigV2, a new revision, retrying on
// conflicts with the hub's own writes.
func setServeConfig(t *testing.T, f *localfleet.Fleet, ns, name, config string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var rs rayv1.RayService
		if err := f.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &rs); err != nil {
			return err
		}
		rs.Spec.ServeConfigV2 = config
		return f.Hub.Client.Update(t.Context(), &rs)
	})
	if err != nil {
		t.Fatalf("setting the serveConfigV2 of RayService %s/%s on the hub: %v", ns, name, err)
	}
}

// eventuallyFor polls check until it passes, timeout expires or an agent dies.
func eventuallyFor(t *testing.T, f *localfleet.Fleet, timeout time.Duration, check func(g gomega.Gomega)) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		if err := f.Exited(); err != nil {
			gomega.StopTrying(err.Error()).Now()
		}
		check(g)
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
}

// binding is the RayServiceBinding of ns/name.
func binding(g gomega.Gomega, f *localfleet.Fleet, ns, name string) *fleetv1alpha1.RayServiceBinding {
	var b fleetv1alpha1.RayServiceBinding
	g.Expect(f.Hub.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &b)).To(gomega.Succeed())
	return &b
}

// holders are the members holding a copy of ns/name not being deleted.
func holders(g gomega.Gomega, f *localfleet.Fleet, ns, name string) []string {
	var out []string
	for _, m := range members {
		var rs rayv1.RayService
		err := f.Members[m].Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs)
		if client.IgnoreNotFound(err) != nil {
			g.Expect(err).NotTo(gomega.HaveOccurred())
		}
		if err == nil && rs.DeletionTimestamp == nil {
			out = append(out, m)
		}
	}
	return out
}

// memberClusters are the members' control planes, in members' order.
func memberClusters(f *localfleet.Fleet) []*localcluster.Cluster {
	out := make([]*localcluster.Cluster, 0, len(members))
	for _, m := range members {
		out = append(out, f.Members[m])
	}
	return out
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
