package status

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestHeadPodReadyCondition(t *testing.T) {
	readyCond := func(s corev1.ConditionStatus, reason, msg string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: s, Reason: reason, Message: msg},
			}
		}
	}
	statuses := func(css ...corev1.ContainerStatus) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Status.ContainerStatuses = css }
	}
	waiting := func(name, reason, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	}
	terminated := func(name, reason, msg string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, Message: msg}}}
	}
	running := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	}
	const notReadyMsg = "containers with unready status: [ray-head]"

	tests := []struct {
		name   string
		noHead bool
		edit   []func(*corev1.Pod)
		want   cond
	}{
		{name: "no head Pod", noHead: true,
			want: cond{metav1.ConditionFalse, rayv1.HeadPodNotFound, "Head Pod not found"}},
		{name: "pending without PodReady condition",
			want: cond{metav1.ConditionFalse, rayv1.UnknownReason, ""}},
		{name: "ready without reason",
			edit: []func(*corev1.Pod){readyCond(corev1.ConditionTrue, "", "")},
			want: cond{metav1.ConditionTrue, rayv1.HeadPodRunningAndReady, ""}},
		{name: "ready with the kubelet's reason kept",
			edit: []func(*corev1.Pod){readyCond(corev1.ConditionTrue, "SomeReason", "msg")},
			want: cond{metav1.ConditionTrue, "SomeReason", "msg"}},
		{name: "unready without reason stays Unknown",
			edit: []func(*corev1.Pod){readyCond(corev1.ConditionFalse, "", "")},
			want: cond{metav1.ConditionFalse, rayv1.UnknownReason, ""}},
		{name: "PodReady Unknown is passed through",
			edit: []func(*corev1.Pod){readyCond(corev1.ConditionUnknown, "NodeLost", "node gone")},
			want: cond{metav1.ConditionUnknown, "NodeLost", "node gone"}},
		{name: "other pod reason is not replaced",
			edit: []func(*corev1.Pod){readyCond(corev1.ConditionFalse, "PodCompleted", ""), statuses(waiting("ray-head", "CrashLoopBackOff", "back-off"))},
			want: cond{metav1.ConditionFalse, "PodCompleted", ""}},
		{name: "ContainersNotReady surfaces the waiting reason",
			edit: []func(*corev1.Pod){readyCond(corev1.ConditionFalse, containersNotReady, notReadyMsg), statuses(waiting("ray-head", "CrashLoopBackOff", "back-off 5m0s"))},
			want: cond{metav1.ConditionFalse, "CrashLoopBackOff", notReadyMsg + "; ray-head: back-off 5m0s"}},
		{name: "ContainersNotReady surfaces the terminated reason",
			edit: []func(*corev1.Pod){readyCond(corev1.ConditionFalse, containersNotReady, ""), statuses(terminated("ray-head", "OOMKilled", ""))},
			want: cond{metav1.ConditionFalse, "OOMKilled", "ray-head: "}},
		{name: "first waiting or terminated container wins, running ones skipped",
			edit: []func(*corev1.Pod){readyCond(corev1.ConditionFalse, containersNotReady, ""), statuses(running("a-sidecar"), waiting("ray-head", "ImagePullBackOff", "pull"), terminated("z", "Error", ""))},
			want: cond{metav1.ConditionFalse, "ImagePullBackOff", "ray-head: pull"}},
		{name: "ContainersNotReady with all containers running keeps the kubelet reason",
			edit: []func(*corev1.Pod){readyCond(corev1.ConditionFalse, containersNotReady, notReadyMsg), statuses(running("ray-head"))},
			want: cond{metav1.ConditionFalse, containersNotReady, notReadyMsg}},
		{name: "empty container reason keeps ContainersNotReady",
			edit: []func(*corev1.Pod){readyCond(corev1.ConditionFalse, containersNotReady, ""), statuses(waiting("ray-head", "", "starting"))},
			want: cond{metav1.ConditionFalse, containersNotReady, "ray-head: starting"}},
		{name: "reason invalid for a condition becomes Unknown",
			edit: []func(*corev1.Pod){readyCond(corev1.ConditionFalse, containersNotReady, ""), statuses(waiting("ray-head", "Bad Reason!", "x"))},
			want: cond{metav1.ConditionFalse, rayv1.UnknownReason, "ray-head: x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var head *corev1.Pod
			if !tc.noHead {
				head = headPod().Obj()
				for _, e := range tc.edit {
					e(head)
				}
			}
			var st rayv1.RayClusterStatus
			setHeadPodReadyCondition(&st, head, t0)
			expectCondition(t, &st, rayv1.HeadPodReady, tc.want)
		})
	}
}

func TestReplicaFailureCondition(t *testing.T) {
	failed := withConditions(map[rayv1.RayClusterConditionType]bool{rayv1.RayClusterReplicaFailure: true})
	cause := errors.New("pods is forbidden")
	tests := []struct {
		name string
		prev rayv1.RayClusterStatus
		err  error
		want cond
	}{
		{name: "clean reconcile, none before", err: nil, want: cond{}},
		{name: "clean reconcile clears it", prev: failed, err: nil, want: cond{}},
		{name: "tagged failure raises it", err: ReplicaFailure(FailedCreateHeadPod, cause),
			want: cond{metav1.ConditionTrue, "FailedCreateHeadPod", "FailedCreateHeadPod\npods is forbidden"}},
		{name: "wrapped failure keeps the whole message",
			err:  fmt.Errorf("RayCluster ns/rc: %w", ReplicaFailure(FailedDeleteWorkerPod, cause)),
			want: cond{metav1.ConditionTrue, "FailedDeleteWorkerPod", "RayCluster ns/rc: FailedDeleteWorkerPod\npods is forbidden"}},
		{name: "joined failure is found", err: errors.Join(errors.New("other"), ReplicaFailure(FailedDeleteAllPods, nil)),
			want: cond{metav1.ConditionTrue, "FailedDeleteAllPods", "other\nFailedDeleteAllPods"}},
		{name: "untagged error leaves an existing one", prev: failed, err: cause,
			want: cond{metav1.ConditionTrue, string(rayv1.RayClusterReplicaFailure), ""}},
		{name: "untagged error adds none", err: cause, want: cond{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.prev.DeepCopy()
			setReplicaFailureCondition(st, tc.err, t1)
			expectCondition(t, st, rayv1.RayClusterReplicaFailure, tc.want)
		})
	}
}

func TestReplicaFailureMessageIsBounded(t *testing.T) {
	var st rayv1.RayClusterStatus
	setReplicaFailureCondition(&st, ReplicaFailure(FailedCreateWorkerPod, errors.New(strings.Repeat("x", 40000))), t0)
	if got := len(meta.FindStatusCondition(st.Conditions, string(rayv1.RayClusterReplicaFailure)).Message); got != conditions.MaxMessageLength {
		t.Errorf("message length = %d, want %d", got, conditions.MaxMessageLength)
	}
}

// A Pod error quoting non-ASCII text (a Pod name or an admission webhook's message) must not
// leave half a character at the cut: the API server would store it as U+FFFD.
func TestReplicaFailureMessageKeepsCharactersWhole(t *testing.T) {
	prefix := string(FailedCreateWorkerPod) + "\n"
	for _, char := range []string{"é", "✓", "😀"} {
		for into := 1; into < len(char); into++ {
			t.Run(fmt.Sprintf("%s cut after %d of %d bytes", char, into, len(char)), func(t *testing.T) {
				// The message is prefix + cause; char starts into bytes before the limit.
				cause := strings.Repeat("x", conditions.MaxMessageLength-len(prefix)-into) + char + "tail"
				var st rayv1.RayClusterStatus
				setReplicaFailureCondition(&st, ReplicaFailure(FailedCreateWorkerPod, errors.New(cause)), t0)
				got := meta.FindStatusCondition(st.Conditions, string(rayv1.RayClusterReplicaFailure)).Message
				if !utf8.ValidString(got) {
					t.Errorf("message ends with a torn character: %q", got[len(got)-4:])
				}
				if want := conditions.MaxMessageLength - into; len(got) != want {
					t.Errorf("message length = %d, want %d (everything before the character)", len(got), want)
				}
			})
		}
	}
}

func TestProvisionedConditionLatches(t *testing.T) {
	allReady := podList(headPod().Ready(), workerPod("w1").Ready())
	oneUnready := podList(headPod().Ready(), workerPod("w1").Running().Condition(corev1.PodReady, corev1.ConditionFalse))
	provisioned := cond{metav1.ConditionTrue, rayv1.AllPodRunningAndReadyFirstTime, "All Ray Pods are ready for the first time"}
	provisioning := cond{metav1.ConditionFalse, rayv1.RayClusterPodsProvisioning, "RayCluster Pods are being provisioned for first time"}
	wasProvisioned := rayv1.RayClusterStatus{Conditions: []metav1.Condition{{
		Type: string(rayv1.RayClusterProvisioned), Status: metav1.ConditionTrue,
		Reason: rayv1.AllPodRunningAndReadyFirstTime, Message: provisioned.message, LastTransitionTime: t0,
	}}}
	suspendedUnprovisioned := withConditions(map[rayv1.RayClusterConditionType]bool{
		rayv1.RayClusterSuspended: true, rayv1.RayClusterProvisioned: false,
	})

	tests := []struct {
		name    string
		prev    rayv1.RayClusterStatus
		pods    []corev1.Pod
		want    cond
		changed bool
	}{
		{name: "no Pods yet", pods: nil, want: provisioning, changed: true},
		{name: "some Pod not ready", pods: oneUnready, want: provisioning, changed: true},
		{name: "pending Pod", pods: podList(headPod().Ready(), workerPod("w1")), want: provisioning, changed: true},
		{name: "all ready the first time", pods: allReady, want: provisioned, changed: true},
		{name: "running without PodReady condition counts as ready",
			pods: podList(headPod().Phase(corev1.PodRunning)), want: provisioned, changed: true},
		{name: "stays true when Pods fail", prev: wasProvisioned, pods: oneUnready, want: provisioned},
		{name: "stays true when Pods are gone", prev: wasProvisioned, pods: nil, want: provisioned},
		{name: "left alone while suspended", prev: suspendedUnprovisioned, pods: allReady,
			want: cond{metav1.ConditionFalse, string(rayv1.RayClusterProvisioned), ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.prev.DeepCopy()
			setProvisionedCondition(st, SuspendState(st), tc.pods, t1)
			expectCondition(t, st, rayv1.RayClusterProvisioned, tc.want)
			ltt := meta.FindStatusCondition(st.Conditions, string(rayv1.RayClusterProvisioned)).LastTransitionTime
			if wantT := map[bool]metav1.Time{true: t1, false: t0}[tc.changed]; !ltt.Equal(&wantT) {
				t.Errorf("lastTransitionTime = %v, want %v", ltt, wantT)
			}
		})
	}
}

func TestSuspendStateMachine(t *testing.T) {
	type conds = map[rayv1.RayClusterConditionType]bool
	off, on := cond{metav1.ConditionFalse, "", ""}, cond{metav1.ConditionTrue, "", ""}
	tests := []struct {
		name           string
		prev           conds
		suspend        *bool
		pods           int
		wantState      rayv1.RayClusterConditionType
		wantSuspending cond
		wantSuspended  cond
		wantUnprovisn  bool // Provisioned reset to False by a finished suspension
	}{
		{name: "new cluster gets both False", prev: nil, suspend: nil, pods: 0, wantSuspending: off, wantSuspended: off},
		{name: "suspend false keeps both False", prev: conds{rayv1.RayClusterSuspending: false, rayv1.RayClusterSuspended: false}, suspend: ptr.To(false), pods: 2, wantSuspending: off, wantSuspended: off},
		{name: "suspend requested starts suspending", prev: conds{rayv1.RayClusterSuspending: false, rayv1.RayClusterSuspended: false}, suspend: ptr.To(true), pods: 2,
			wantState: rayv1.RayClusterSuspending, wantSuspending: on, wantSuspended: off},
		{name: "suspend requested with no Pods still goes through suspending", prev: nil, suspend: ptr.To(true), pods: 0,
			wantState: rayv1.RayClusterSuspending, wantSuspending: on, wantSuspended: off},
		{name: "suspending waits for Pods to go", prev: conds{rayv1.RayClusterSuspending: true, rayv1.RayClusterSuspended: false}, suspend: ptr.To(true), pods: 1,
			wantState: rayv1.RayClusterSuspending, wantSuspending: on, wantSuspended: off},
		{name: "suspending completes even if suspend was withdrawn", prev: conds{rayv1.RayClusterSuspending: true, rayv1.RayClusterSuspended: false}, suspend: ptr.To(false), pods: 1,
			wantState: rayv1.RayClusterSuspending, wantSuspending: on, wantSuspended: off},
		{name: "last Pod gone: suspended", prev: conds{rayv1.RayClusterSuspending: true, rayv1.RayClusterSuspended: false, rayv1.RayClusterProvisioned: true}, suspend: ptr.To(true), pods: 0,
			wantState: rayv1.RayClusterSuspended, wantSuspending: off, wantSuspended: on, wantUnprovisn: true},
		{name: "suspended stays while suspend is set", prev: conds{rayv1.RayClusterSuspending: false, rayv1.RayClusterSuspended: true}, suspend: ptr.To(true), pods: 0,
			wantState: rayv1.RayClusterSuspended, wantSuspending: off, wantSuspended: on},
		{name: "resume on suspend false", prev: conds{rayv1.RayClusterSuspending: false, rayv1.RayClusterSuspended: true}, suspend: ptr.To(false), pods: 0,
			wantSuspending: off, wantSuspended: off},
		{name: "resume when suspend is removed", prev: conds{rayv1.RayClusterSuspending: false, rayv1.RayClusterSuspended: true}, suspend: nil, pods: 0,
			wantSuspending: off, wantSuspended: off},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := withConditions(tc.prev)
			rc := raybuilder.MakeRayCluster(testCluster, testNS).Obj()
			rc.Spec.Suspend = tc.suspend
			setSuspendConditions(&st, rc, SuspendState(&st), tc.pods, t1)
			if got := SuspendState(&st); got != tc.wantState {
				t.Errorf("SuspendState = %q, want %q", got, tc.wantState)
			}
			check := func(typ rayv1.RayClusterConditionType, want cond) {
				want.reason = string(typ)
				expectCondition(t, &st, typ, want)
			}
			check(rayv1.RayClusterSuspending, tc.wantSuspending)
			check(rayv1.RayClusterSuspended, tc.wantSuspended)
			if tc.wantUnprovisn {
				expectCondition(t, &st, rayv1.RayClusterProvisioned,
					cond{metav1.ConditionFalse, rayv1.RayClusterPodsProvisioning, "RayCluster has been suspended"})
			}
		})
	}
}

func TestSuspendState(t *testing.T) {
	type conds = map[rayv1.RayClusterConditionType]bool
	tests := []struct {
		name  string
		conds conds
		want  rayv1.RayClusterConditionType
	}{
		{"none", nil, ""},
		{"both false", conds{rayv1.RayClusterSuspending: false, rayv1.RayClusterSuspended: false}, ""},
		{"suspending", conds{rayv1.RayClusterSuspending: true, rayv1.RayClusterSuspended: false}, rayv1.RayClusterSuspending},
		{"suspended", conds{rayv1.RayClusterSuspending: false, rayv1.RayClusterSuspended: true}, rayv1.RayClusterSuspended},
		{"both true prefers finishing the deletion", conds{rayv1.RayClusterSuspending: true, rayv1.RayClusterSuspended: true}, rayv1.RayClusterSuspending},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := withConditions(tc.conds)
			if got := SuspendState(&st); got != tc.want {
				t.Errorf("SuspendState = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPodsForbiddenCondition(t *testing.T) {
	now := metav1.Now().Rfc3339Copy()
	raised := metav1.Condition{Type: "PodsForbidden", Status: metav1.ConditionTrue, Reason: "PodSecurityViolation",
		Message: "old", ObservedGeneration: 1, LastTransitionTime: now}
	tests := []struct {
		name      string
		before    []metav1.Condition
		forbidden []string
		// want is the condition's message; "" means absent.
		want string
	}{
		{name: "not checked leaves nothing", forbidden: nil},
		{name: "not checked keeps what was said", before: []metav1.Condition{raised}, forbidden: nil, want: "old"},
		{name: "checked and allowed drops it", before: []metav1.Condition{raised}, forbidden: []string{}},
		{
			name:      "every forbidden template is named",
			forbidden: []string{`head Pod violates PodSecurity "baseline": privileged`, "worker group w violates x"},
			want: "The spoke creates no Pod that violates this member's Pod Security level; " +
				`head Pod violates PodSecurity "baseline": privileged; worker group w violates x`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &rayv1.RayClusterStatus{Conditions: tt.before}
			setPodsForbiddenCondition(st, tt.forbidden, 2, now)
			c := meta.FindStatusCondition(st.Conditions, "PodsForbidden")
			switch {
			case tt.want == "" && c != nil:
				t.Errorf("condition %+v, want none", c)
			case tt.want != "" && c == nil:
				t.Errorf("no condition, want message %q", tt.want)
			case c != nil && (c.Message != tt.want || c.Status != metav1.ConditionTrue || c.Reason != "PodSecurityViolation"):
				t.Errorf("condition %+v, want True/PodSecurityViolation %q", c, tt.want)
			}
		})
	}
}
