package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/rollout"
	"github.com/rayfleet/rayfleet/hub/revision"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// rolloutNamespace holds the test's hub RayServices.
const rolloutNamespace = "serve"

// TestRollout drives every `rayfleet rollout` verb against a hub API server holding what a
// hub would have written (RayServices with its finalizer, bindings, ControllerRevisions); no
// hub runs.
func TestRollout(t *testing.T) {
	env := envtest.Start(t, envtest.WithCRDDirectories("charts/rayfleet-hub/crds"))
	hubFile := filepath.Join(t.TempDir(), "hub")
	if err := os.WriteFile(hubFile, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rolloutNamespace}}); err != nil {
		t.Fatal(err)
	}
	h := &rolloutHub{t: t, c: env.Client, scheme: env.Scheme, file: hubFile}

	t.Run("not under RayFleet", h.testNotPlaced)
	t.Run("status and history", h.testStatusAndHistory)
	t.Run("-o", h.testRolloutOutput)
	t.Run("completion", h.testCompletion)
	t.Run("pause and resume", h.testPause)
	t.Run("approve", h.testApprove)
	t.Run("undo", h.testUndo)
	t.Run("undo retries a conflict", func(t *testing.T) { testUndoConflict(t, env) })
	t.Run("watch", h.testWatch)
	t.Run("blue/green", h.testBlueGreen)
}

// rolloutHub writes hub objects and runs the CLI against the hub.
type rolloutHub struct {
	t      *testing.T
	c      client.Client
	scheme *runtime.Scheme
	file   string
}

// run runs `rayfleet rollout args... --hub-kubeconfig <hub>`.
func (h *rolloutHub) run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runCLI(t, append(append([]string{"rollout"}, args...), "--hub-kubeconfig", h.file)...)
}

// images are the Ray images of the test revisions: revision n runs images[n-1].
var images = []string{"rayproject/ray:2.40.0", "rayproject/ray:2.41.0", "rayproject/ray:2.42.0"}

// place creates the hub RayService name as the hub leaves it (with its finalizer) on spec
// revision current (1-based, of images), its revisions 1 to len(images), and its binding on
// clusters with status.
func (h *rolloutHub) place(t *testing.T, name string, current int, clusters []string, status fleetv1alpha1.RayServiceBindingStatus) *rayv1.RayService {
	t.Helper()
	ctx := t.Context()
	svc := rayServiceOf(name, current)
	svc.Finalizers = []string{labels.MemberCleanupFinalizer}
	if err := h.c.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= len(images); n++ {
		h.createRevision(t, svc, n)
	}
	writeBinding(ctx, t, h.c, rolloutNamespace, name, fleetv1alpha1.RayServiceBindingSpec{Clusters: clusters, PolicyName: "staged"}, status)
	return svc
}

// rayServiceOf is RayService name on revision n's image.
func rayServiceOf(name string, n int) *rayv1.RayService {
	svc := raybuilder.MakeRayService(name, rolloutNamespace).Image(images[n-1]).Obj()
	svc.UID, svc.Generation = "", 0
	return svc
}

// revisionName names revision n of RayService name as the hub does: <name>-<hash[:10]>.
func revisionName(name string, n int) string { return fmt.Sprintf("%s-%010d", name, n) }

// createRevision creates revision n of svc, as the hub would.
func (h *rolloutHub) createRevision(t *testing.T, svc *rayv1.RayService, n int) {
	t.Helper()
	data, err := json.Marshal(revision.Content{Spec: rayServiceOf(svc.Name, n).Spec})
	if err != nil {
		t.Fatal(err)
	}
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: revisionName(svc.Name, n), Namespace: svc.Namespace,
			Labels: map[string]string{labels.OriginName: svc.Name, labels.OriginUID: string(svc.UID)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: int64(n),
	}
	if err := controllerutil.SetControllerReference(svc, cr, h.scheme); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Create(t.Context(), cr); err != nil {
		t.Fatal(err)
	}
}

// updateRollout changes binding name's status with change.
func (h *rolloutHub) updateRollout(t *testing.T, name string, change func(*fleetv1alpha1.RayServiceBindingStatus)) {
	t.Helper()
	var b fleetv1alpha1.RayServiceBinding
	if err := h.c.Get(t.Context(), types.NamespacedName{Namespace: rolloutNamespace, Name: name}, &b); err != nil {
		t.Fatal(err)
	}
	change(&b.Status)
	if err := h.c.Status().Update(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
}

// getRayService reads hub RayService name.
func (h *rolloutHub) getRayService(t *testing.T, name string) *rayv1.RayService {
	t.Helper()
	var svc rayv1.RayService
	if err := h.c.Get(t.Context(), types.NamespacedName{Namespace: rolloutNamespace, Name: name}, &svc); err != nil {
		t.Fatal(err)
	}
	return &svc
}

// clusterAt is cluster name on revision n of RayService svc in phase, entered d before now.
func clusterAt(svc, name string, n int, phase fleetv1alpha1.ClusterRolloutPhase, d time.Duration, reason string) fleetv1alpha1.ClusterStatus {
	cs := fleetv1alpha1.ClusterStatus{Name: name, Revision: revisionName(svc, n), RolloutPhase: phase, PhaseTime: ptr.To(metav1.NewTime(now.Add(-d)))}
	if reason != "" {
		cs.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(now)}}
	}
	return cs
}

func (h *rolloutHub) testNotPlaced(t *testing.T) {
	bare := rayServiceOf("bare", 1)
	if err := h.c.Create(t.Context(), bare); err != nil {
		t.Fatal(err)
	}
	const notPlaced = "rayfleet rollout status: RayService serve/bare has no RayServiceBinding: it is not placed by RayFleet " +
		"(is the hub running and is this the hub cluster?)\n"
	if stdout, stderr, code := h.run(t, "status", "serve/bare"); code != 1 || stdout != "" || stderr != notPlaced {
		t.Errorf("status: code %d, stdout %q, stderr %q; want:\n%s", code, stdout, stderr, notPlaced)
	}
	// A binding without the hub's finalizer on the RayService: no hub manages it.
	writeBinding(t.Context(), t, h.c, rolloutNamespace, "bare", fleetv1alpha1.RayServiceBindingSpec{}, fleetv1alpha1.RayServiceBindingStatus{})
	for _, verb := range []string{"history", "pause", "approve", "undo"} {
		_, stderr, code := h.run(t, verb, "serve/bare")
		if code != 1 || !strings.Contains(stderr, "RayService serve/bare has no "+labels.MemberCleanupFinalizer+" finalizer: it is not placed by RayFleet") {
			t.Errorf("rollout %s: code %d, stderr %q", verb, code, stderr)
		}
	}
	if _, stderr, code := h.run(t, "status", "serve/nothing"); code != 1 || !strings.Contains(stderr, "RayService serve/nothing not found on the hub") {
		t.Errorf("status of a missing RayService: code %d, stderr %q", code, stderr)
	}
	if got := h.getRayService(t, "bare"); len(got.Annotations) != 0 {
		t.Errorf("pause annotated a RayService RayFleet does not place: %v", got.Annotations)
	}
}

// stagedPolicy has a canary stage soaking 10 minutes and waiting for approval, then eu.
func (h *rolloutHub) stagedPolicy(t *testing.T) {
	t.Helper()
	p := &fleetv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: rolloutNamespace, Name: "staged"},
		Spec: fleetv1alpha1.PlacementPolicySpec{Rollout: &fleetv1alpha1.RolloutStrategy{
			SoakSeconds: ptr.To[int32](120),
			Stages: []fleetv1alpha1.RolloutStage{
				{Name: "canary", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}},
					SoakSeconds: ptr.To[int32](600), Approval: true},
				{Name: "eu", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}, Approval: true},
			},
		}},
	}
	if err := client.IgnoreAlreadyExists(h.c.Create(t.Context(), p)); err != nil {
		t.Fatal(err)
	}
}

// awaitingEU is llm rolling out revision 3: canary m1 done soaking for 100s, eu (m2) waiting
// for approval, m3 not started.
func awaitingEU(name string) fleetv1alpha1.RayServiceBindingStatus {
	start := metav1.NewTime(now.Add(-5 * time.Minute))
	return fleetv1alpha1.RayServiceBindingStatus{
		Rollout: &fleetv1alpha1.RolloutStatus{
			TargetRevision: revisionName(name, 3), GoodRevision: revisionName(name, 2),
			Phase: fleetv1alpha1.RolloutAwaitingApproval, Stage: "eu", Updated: "0/3", StartTime: &start,
			Message: "stage eu waits for approval",
			Stages:  []fleetv1alpha1.StageStatus{{Name: "canary", Clusters: []string{"m1"}, StartTime: &start, Approved: true}},
		},
		Clusters: []fleetv1alpha1.ClusterStatus{
			clusterAt(name, "m1", 3, fleetv1alpha1.ClusterSoaking, 100*time.Second, "RunningAll"),
			clusterAt(name, "m2", 2, fleetv1alpha1.ClusterPending, time.Hour, "RunningAll"),
			clusterAt(name, "m3", 2, fleetv1alpha1.ClusterPending, time.Hour, "Unhealthy"),
		},
	}
}

func (h *rolloutHub) testStatusAndHistory(t *testing.T) {
	h.stagedPolicy(t)
	h.place(t, "llm", 3, []string{"m1", "m2", "m3"}, awaitingEU("llm"))

	stdout, stderr, code := h.run(t, "status", "serve/llm")
	want := `RayService serve/llm
Phase:     AwaitingApproval (stage eu, 0/3 updated)
Target:    revision 3 (llm-0000000003)
Good:      revision 2 (llm-0000000002)
Failed:    -
Started:   5m ago
Message:   stage eu waits for approval

STAGE    CLUSTER   REVISION   PHASE     SOAK LEFT   REASON
canary   m1        3          Soaking   8m20s       RunningAll
-        m2        2          Pending   -           RunningAll
-        m3        2          Pending   -           Unhealthy
`
	if code != 0 || stdout != want {
		t.Errorf("status: code %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}

	stdout, stderr, code = h.run(t, "history", "serve/llm")
	want = `REVISION   NAME             CREATED   ROLLOUT   CLUSTERS
1          llm-0000000001   %[1]s   -         -
2          llm-0000000002   %[1]s   good      m2,m3
3          llm-0000000003   %[1]s   target    m1
`
	// The API server sets the creation times; the fake clock is at a fixed date.
	if code != 0 || !matchesIgnoringAges(stdout, want) {
		t.Errorf("history: code %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, want)
	}

	stdout, stderr, code = h.run(t, "history", "--revision", "1", "serve/llm")
	if code != 0 || !strings.HasPrefix(stdout, "# RayService serve/llm, revision 1: ControllerRevision llm-0000000001\nspec:\n") ||
		!strings.Contains(stdout, "image: "+images[0]) || strings.Contains(stdout, images[2]) {
		t.Errorf("history --revision 1: code %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	if _, stderr, code = h.run(t, "history", "serve/llm", "--revision", "4"); code != 1 ||
		!strings.Contains(stderr, "RayService serve/llm has no revision 4 (it has 1, 2, 3)") {
		t.Errorf("history --revision 4: code %d, stderr %q", code, stderr)
	}
}

// matchesIgnoringAges compares a table whose CREATED column is %[1]s in want.
func matchesIgnoringAges(got, want string) bool {
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(want, "\n")
	if len(gotLines) != len(wantLines) {
		return false
	}
	for i := range gotLines {
		g, w := strings.Fields(gotLines[i]), strings.Fields(strings.ReplaceAll(wantLines[i], "%[1]s", "AGE ago"))
		if len(g) != len(w) {
			return false
		}
		for j := range g {
			if w[j] != "AGE" && g[j] != w[j] {
				return false
			}
		}
	}
	return true
}

func (h *rolloutHub) testPause(t *testing.T) {
	svc := h.getRayService(t, "llm")
	svc.Annotations = map[string]string{"team": "serving"}
	if err := h.c.Update(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		verb, want string
		paused     bool
	}{
		{"pause", "RayService serve/llm paused: no cluster starts until resume; clusters in flight finish\n", true},
		{"pause", "RayService serve/llm is paused already (fleet.rayfleet.io/paused=true): no cluster starts until resume\n", true},
		{"resume", "RayService serve/llm resumed: the rollout continues where it stopped\n", false},
		{"resume", "RayService serve/llm is not paused: nothing to resume\n", false},
	}
	for _, step := range steps {
		stdout, stderr, code := h.run(t, step.verb, "serve/llm")
		if code != 0 || stdout != step.want {
			t.Errorf("%s: code %d, stderr %q, stdout %q; want %q", step.verb, code, stderr, stdout, step.want)
		}
		got := h.getRayService(t, "llm")
		want := map[string]string{"team": "serving"}
		if step.paused {
			want[labels.Paused] = "true"
		}
		if fmt.Sprint(got.Annotations) != fmt.Sprint(want) || got.Generation != svc.Generation {
			t.Errorf("after %s: annotations %v, generation %d; want %v, generation %d", step.verb, got.Annotations, got.Generation, want, svc.Generation)
		}
	}
	for _, verb := range []string{"pause", "status", "resume"} {
		stdout, stderr, code := h.run(t, verb, "serve/llm")
		if code != 0 {
			t.Fatalf("%s: code %d, stderr %q", verb, code, stderr)
		}
		if verb == "status" && !strings.Contains(stdout, "\nPaused:    yes (fleet.rayfleet.io/paused=true)") {
			t.Errorf("status of a paused RayService does not say so:\n%s", stdout)
		}
	}
}

func (h *rolloutHub) testApprove(t *testing.T) {
	approval := func() string {
		var b fleetv1alpha1.RayServiceBinding
		if err := h.c.Get(t.Context(), types.NamespacedName{Namespace: rolloutNamespace, Name: "llm"}, &b); err != nil {
			t.Fatal(err)
		}
		return b.Annotations[labels.ApprovedStage]
	}
	steps := []struct {
		name         string
		args         []string
		progressing  bool
		wantCode     int
		wantOut      string
		wantApproval string
	}{
		{name: "a stage the policy lacks", args: []string{"--stage", "us"}, wantCode: 1,
			wantOut: `nothing awaits approval: PlacementPolicy staged has no stage "us" (its stages: canary, eu, rest)`},
		{name: "a stage started already", args: []string{"--stage", "canary"}, wantCode: 1,
			wantOut: "nothing awaits approval: stage canary of the rollout of RayService serve/llm to revision 3 (llm-0000000003) has started already"},
		{name: "the awaited stage", wantOut: "approved stage eu of RayService serve/llm (fleet.rayfleet.io/approved-stage=llm-0000000003/eu): " +
			"the hub starts it when the rollout reaches it\n", wantApproval: "llm-0000000003/eu"},
		{name: "again", args: []string{"--stage", "eu"}, wantOut: "stage eu of RayService serve/llm is approved already " +
			"(fleet.rayfleet.io/approved-stage=llm-0000000003/eu)\n", wantApproval: "llm-0000000003/eu"},
		{name: "nothing awaiting", progressing: true, wantCode: 1, wantApproval: "llm-0000000003/eu",
			wantOut: "rayfleet rollout approve: nothing awaits approval: the rollout of RayService serve/llm to revision 3 (llm-0000000003) " +
				"is Progressing (stage eu, 1/3 updated); name a later stage with --stage to approve it ahead\n"},
		{name: "the last stage ahead", progressing: true, args: []string{"--stage", "rest"},
			wantOut: "approved stage rest of RayService serve/llm", wantApproval: "llm-0000000003/rest"},
	}
	for _, step := range steps {
		if step.progressing {
			h.updateRollout(t, "llm", func(s *fleetv1alpha1.RayServiceBindingStatus) {
				s.Rollout.Phase, s.Rollout.Updated = fleetv1alpha1.RolloutProgressing, "1/3"
			})
		}
		stdout, stderr, code := h.run(t, append([]string{"approve", "serve/llm"}, step.args...)...)
		out := stdout
		if step.wantCode != 0 {
			out = stderr
		}
		if code != step.wantCode || !strings.Contains(out, step.wantOut) {
			t.Errorf("%s: code %d, stdout %q, stderr %q; want code %d and %q", step.name, code, stdout, stderr, step.wantCode, step.wantOut)
		}
		if got := approval(); got != step.wantApproval {
			t.Errorf("%s: approval %q, want %q", step.name, got, step.wantApproval)
		}
	}
}

func (h *rolloutHub) testUndo(t *testing.T) {
	h.place(t, "asr", 3, []string{"m1"}, fleetv1alpha1.RayServiceBindingStatus{Rollout: &fleetv1alpha1.RolloutStatus{
		TargetRevision: revisionName("asr", 3), GoodRevision: revisionName("asr", 2), Phase: fleetv1alpha1.RolloutProgressing,
	}})
	image := func() string {
		return h.getRayService(t, "asr").Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image
	}
	steps := []struct {
		name      string
		args      []string
		wantCode  int
		wantOut   string
		wantImage string
	}{
		{name: "to the good revision", wantImage: images[1],
			wantOut: "RayService serve/asr rolled back to revision 2 (asr-0000000002): the hub rolls it out as a spec change\n" +
				"if a GitOps tool syncs this RayService, commit the same spec to its source, or it rolls the change forward again\n"},
		{name: "to the good revision again", wantCode: 1, wantImage: images[1],
			wantOut: "rayfleet rollout undo: rolling back RayService serve/asr: nothing to undo: revision 2 (asr-0000000002) is the spec of RayService serve/asr already\n"},
		{name: "to revision 1", args: []string{"--to-revision", "1"}, wantImage: images[0],
			wantOut: "RayService serve/asr rolled back to revision 1 (asr-0000000001)"},
		{name: "to a revision that is not", args: []string{"--to-revision", "7"}, wantCode: 1, wantImage: images[0],
			wantOut: "RayService serve/asr has no revision 7 (it has 1, 2, 3)"},
		{name: "to revision 3", args: []string{"--to-revision", "3"}, wantImage: images[2],
			wantOut: "RayService serve/asr rolled back to revision 3 (asr-0000000003)"},
	}
	for _, step := range steps {
		stdout, stderr, code := h.run(t, append([]string{"undo", "serve/asr"}, step.args...)...)
		out := stdout
		if step.wantCode != 0 {
			out = stderr
		}
		if code != step.wantCode || !strings.Contains(out, step.wantOut) {
			t.Errorf("%s: code %d, stdout %q, stderr %q; want code %d and %q", step.name, code, stdout, stderr, step.wantCode, step.wantOut)
		}
		if got := image(); got != step.wantImage {
			t.Errorf("%s: image %q, want %q", step.name, got, step.wantImage)
		}
	}
	// Until a revision is good, undo returns to the baseline, the revision that runs.
	h.updateRollout(t, "asr", func(s *fleetv1alpha1.RayServiceBindingStatus) {
		s.Rollout.GoodRevision, s.Rollout.BaselineRevision = "", revisionName("asr", 1)
	})
	if stdout, stderr, code := h.run(t, "undo", "serve/asr"); code != 0 ||
		!strings.Contains(stdout, "RayService serve/asr rolled back to revision 1 (asr-0000000001)") || image() != images[0] {
		t.Errorf("undo to the baseline: code %d, stdout %q, stderr %q, image %s", code, stdout, stderr, image())
	}
	// Without a good or a running (baseline) revision, undo needs to be told which.
	h.updateRollout(t, "asr", func(s *fleetv1alpha1.RayServiceBindingStatus) {
		s.Rollout.GoodRevision, s.Rollout.BaselineRevision = "", ""
	})
	if _, stderr, code := h.run(t, "undo", "serve/asr"); code != 1 ||
		!strings.Contains(stderr, "the hub has recorded no good or running revision of RayService serve/asr: name one with --to-revision") {
		t.Errorf("undo without a good revision: code %d, stderr %q", code, stderr)
	}
}

// testUndoConflict has someone else update the RayService between undo's read and its
// update: undo reads again, keeps the other change and rolls back.
func testUndoConflict(t *testing.T, env *envtest.Env) {
	ctx := t.Context()
	base, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	updates := 0
	c := interceptor.NewClient(base, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			updates++
			if updates == 1 {
				var other rayv1.RayService
				if getErr := c.Get(ctx, client.ObjectKeyFromObject(obj), &other); getErr != nil {
					return getErr
				}
				other.Labels = map[string]string{"owner": "someone-else"}
				if updateErr := c.Update(ctx, &other); updateErr != nil {
					return updateErr
				}
			}
			return c.Update(ctx, obj, opts...)
		},
	})
	key := types.NamespacedName{Namespace: rolloutNamespace, Name: "asr"}
	r, err := rollout.Undo(ctx, c, key, 2)
	if err != nil {
		t.Fatal(err)
	}
	var got rayv1.RayService
	if err := base.Get(ctx, key, &got); err != nil {
		t.Fatal(err)
	}
	if r.Revision != 2 || updates != 2 || got.Labels["owner"] != "someone-else" ||
		got.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image != images[1] {
		t.Errorf("undo over a conflict: revision %d after %d updates; labels %v, image %s",
			r.Revision, updates, got.Labels, got.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image)
	}
}

// syncBuffer is a bytes.Buffer the watching command writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testWatch follows a rollout with --watch: a Complete phase of the spec before does not end
// it, every change of the binding is printed, Complete ends it with 0 and Stalled with 1.
func (h *rolloutHub) testWatch(t *testing.T) {
	g := gomega.NewWithT(t)
	// The RayService's spec is revision 2's; the binding still speaks of revision 1, complete.
	h.place(t, "tts", 2, []string{"m1"}, fleetv1alpha1.RayServiceBindingStatus{
		Rollout: &fleetv1alpha1.RolloutStatus{TargetRevision: revisionName("tts", 1), GoodRevision: revisionName("tts", 1),
			Phase: fleetv1alpha1.RolloutComplete},
		Clusters: []fleetv1alpha1.ClusterStatus{clusterAt("tts", "m1", 1, fleetv1alpha1.ClusterDone, time.Hour, "RunningAll")},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*waitTimeout)
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		args := []string{"rollout", "status", "serve/tts", "--watch", "--hub-kubeconfig", h.file}
		done <- runWith(ctx, args, streams{IOStreams: genericiooptions.IOStreams{Out: &stdout, ErrOut: &stderr}, clock: clocktesting.NewFakePassiveClock(now)})
	}()
	g.Eventually(stdout.String).WithTimeout(waitTimeout).Should(gomega.ContainSubstring(
		"Note:      the target is not the RayService's current spec"))

	h.updateRollout(t, "tts", func(s *fleetv1alpha1.RayServiceBindingStatus) {
		s.Rollout.TargetRevision, s.Rollout.Phase, s.Rollout.Stage = revisionName("tts", 2), fleetv1alpha1.RolloutProgressing, "rest"
		s.Clusters[0] = clusterAt("tts", "m1", 2, fleetv1alpha1.ClusterUpdating, 0, "UpgradeInProgress")
	})
	g.Eventually(stdout.String).WithTimeout(waitTimeout).Should(gomega.ContainSubstring(
		"-       m1        2          Updating   -           UpgradeInProgress\n"))
	select {
	case code := <-done:
		t.Fatalf("watch ended with %d on a Complete phase of the spec before; stdout:\n%s\nstderr: %s", code, stdout.String(), stderr.String())
	default:
	}

	// Soaking since 15s by the CLI's clock; the policy named (staged) soaks 120s.
	h.updateRollout(t, "tts", func(s *fleetv1alpha1.RayServiceBindingStatus) {
		s.Clusters[0] = clusterAt("tts", "m1", 2, fleetv1alpha1.ClusterSoaking, 15*time.Second, "RunningAll")
	})
	g.Eventually(stdout.String).WithTimeout(waitTimeout).Should(gomega.ContainSubstring(
		"-       m1        2          Soaking   105s        RunningAll\n"))

	h.updateRollout(t, "tts", func(s *fleetv1alpha1.RayServiceBindingStatus) {
		s.Rollout.Phase, s.Rollout.GoodRevision = fleetv1alpha1.RolloutComplete, revisionName("tts", 2)
		s.Clusters[0] = clusterAt("tts", "m1", 2, fleetv1alpha1.ClusterDone, 0, "RunningAll")
	})
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("watch until Complete: exit code %d, stderr %q", code, stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("watch did not end on Complete; stdout:\n%s", stdout.String())
	}
	views := strings.Split(stdout.String(), "\n\nRayService serve/tts\n")
	if len(views) != 4 || !strings.HasSuffix(views[3], "-       m1        2          Done    -           RunningAll\n") {
		t.Errorf("watch printed %d views, want 4 (each change once), the last Done; stdout:\n%s", len(views), stdout.String())
	}

	// Stalled: the watch prints the rollout once and fails.
	h.updateRollout(t, "tts", func(s *fleetv1alpha1.RayServiceBindingStatus) {
		s.Rollout.Phase, s.Rollout.Message = fleetv1alpha1.RolloutStalled, "m1 not done within 600s: Unhealthy"
	})
	out, errOut, code := h.run(t, "status", "serve/tts", "-w")
	if code != 1 || !strings.Contains(out, "Phase:     Stalled") || errOut != "rayfleet rollout status: rollout of RayService serve/tts "+
		"to revision 2 (tts-0000000002) stalled: m1 not done within 600s: Unhealthy\n" {
		t.Errorf("watch of a stalled rollout: code %d, stdout:\n%s\nstderr %q", code, out, errOut)
	}
}
