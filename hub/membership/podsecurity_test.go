package membership

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func namespace(name string, lbls map[string]string) corev1.Namespace {
	return corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

func TestUnlabelledWithCopies(t *testing.T) {
	deleting := namespace("going", nil)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	namespaces := []corev1.Namespace{
		namespace("b-bare", nil),
		namespace("a-bare", map[string]string{"team": "a"}),
		namespace("labelled", map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}),
		namespace("empty", nil),
		deleting,
	}
	holding := map[string]bool{}
	for _, ns := range []string{"b-bare", "a-bare", "labelled", "going", "elsewhere"} {
		holding[ns] = true
	}
	var asked []string
	holds := func(ns string) (bool, error) {
		asked = append(asked, ns)
		return holding[ns], nil
	}
	got, err := unlabelledWithCopies(namespaces, holds)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a-bare", "b-bare"}, got); diff != "" {
		t.Errorf("unlabelledWithCopies (-want +got):\n%s", diff)
	}
	// Labelled and deleting namespaces are settled by their own fields: no copy is read for them.
	if diff := cmp.Diff([]string{"b-bare", "a-bare", "empty"}, asked); diff != "" {
		t.Errorf("namespaces asked about (-want +got):\n%s", diff)
	}

	failed := errors.New("the cache is gone")
	if _, err := unlabelledWithCopies(namespaces, func(string) (bool, error) { return false, failed }); !errors.Is(err, failed) {
		t.Errorf("a failed read: got %v, want %v", err, failed)
	}
}

func TestViolations(t *testing.T) {
	tests := []struct {
		name     string
		warnings []string
		want     []string
	}{
		{name: "no warnings: clean"},
		{
			name: "the heading is dropped, every Pod line kept",
			warnings: []string{
				`existing pods in namespace "team" violate the new PodSecurity enforce level "baseline:latest"`,
				`head-x (and 1 other pod): privileged, host namespaces`,
				`worker-y: hostPath volumes`,
			},
			want: []string{`head-x (and 1 other pod): privileged, host namespaces`, `worker-y: hostPath volumes`},
		},
		{
			name:     "a check that did not see every Pod is no clean bill",
			warnings: []string{"new PodSecurity enforce level only checked against the first 3000 of 3001 existing pods"},
			want:     []string{"new PodSecurity enforce level only checked against the first 3000 of 3001 existing pods"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, violations(tt.warnings)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetPodSecurity(t *testing.T) {
	obs := Observation{Generation: 3, Now: t0.Add(time.Minute)}
	violating := []fleetv1alpha1.UnenforcedNamespace{{Name: "team", Violations: []string{"head-x: privileged"}}}
	tests := []struct {
		name       string
		prev       fleetv1alpha1.MemberClusterStatus
		e          *NamespaceEnforcement
		wantStatus metav1.ConditionStatus // "" for no condition
		wantReason string
		wantInMsg  string
		wantList   []fleetv1alpha1.UnenforcedNamespace
	}{
		{name: "not looked at: nothing set"},
		{
			name: "not looked at: the last verdict kept",
			prev: fleetv1alpha1.MemberClusterStatus{UnenforcedNamespaces: violating, Conditions: []metav1.Condition{{
				Type: fleetv1alpha1.ConditionPodSecurityEnforced, Status: metav1.ConditionFalse, Reason: fleetv1alpha1.ReasonPodsViolateLevel}}},
			wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonPodsViolateLevel, wantList: violating,
		},
		{
			name:       "every namespace labelled",
			e:          &NamespaceEnforcement{Level: "baseline", Labelled: []string{"team"}},
			wantStatus: metav1.ConditionTrue, wantReason: fleetv1alpha1.ReasonNamespacesEnforced, wantInMsg: "level baseline",
		},
		{
			name:       "a namespace left unlabelled names its Pods and checks",
			e:          &NamespaceEnforcement{Level: "restricted", Unenforced: violating},
			wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonPodsViolateLevel,
			wantInMsg: "not labelled pod-security.kubernetes.io/enforce=restricted, Pods running there break it " +
				"(nothing was moved or deleted): namespace team: head-x: privileged",
			wantList: violating,
		},
		{
			name:       "a namespace labelled since clears the list",
			prev:       fleetv1alpha1.MemberClusterStatus{UnenforcedNamespaces: violating},
			e:          &NamespaceEnforcement{Level: "baseline", Labelled: []string{"team"}},
			wantStatus: metav1.ConditionTrue, wantReason: fleetv1alpha1.ReasonNamespacesEnforced,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := *tt.prev.DeepCopy()
			setPodSecurity(&st, tt.e, obs)
			if diff := cmp.Diff(tt.wantList, st.UnenforcedNamespaces); diff != "" {
				t.Errorf("unenforcedNamespaces (-want +got):\n%s", diff)
			}
			c := meta.FindStatusCondition(st.Conditions, fleetv1alpha1.ConditionPodSecurityEnforced)
			if tt.wantStatus == "" {
				if c != nil {
					t.Errorf("condition = %+v, want none", c)
				}
				return
			}
			if c == nil || c.Status != tt.wantStatus || c.Reason != tt.wantReason || !strings.Contains(c.Message, tt.wantInMsg) {
				t.Fatalf("condition = %+v, want %s/%s with %q", c, tt.wantStatus, tt.wantReason, tt.wantInMsg)
			}
			if tt.e != nil && c.ObservedGeneration != 3 {
				t.Errorf("observedGeneration = %d, want 3", c.ObservedGeneration)
			}
		})
	}
}

func TestVerdicts(t *testing.T) {
	var v verdicts
	found := verdict{at: t0, level: "baseline", violations: []string{"p: privileged"}}
	v.record("m1", "team", found)
	tests := []struct {
		name          string
		member, ns    string
		level         string
		now           time.Time
		wantViolation bool
	}{
		{name: "within the recheck: the verdict stands", member: "m1", ns: "team", level: "baseline", now: t0.Add(59 * time.Second), wantViolation: true},
		{name: "past the recheck: judged again", member: "m1", ns: "team", level: "baseline", now: t0.Add(time.Minute)},
		{name: "another level: judged again", member: "m1", ns: "team", level: "restricted", now: t0},
		{name: "another member", member: "m2", ns: "team", level: "baseline", now: t0},
		{name: "another namespace", member: "m1", ns: "other", level: "baseline", now: t0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := v.recent(tt.member, tt.ns, tt.level, tt.now, time.Minute)
			if ok != tt.wantViolation {
				t.Fatalf("recent = %v, %t, want found %t", got, ok, tt.wantViolation)
			}
			if ok && !cmp.Equal(got, found.violations) {
				t.Errorf("violations = %q, want %q", got, found.violations)
			}
		})
	}
	v.keepOnly("m1", []string{"other"})
	if _, ok := v.recent("m1", "team", "baseline", t0, time.Minute); ok {
		t.Error("a namespace labelled since keeps its verdict")
	}
	v.record("m1", "team", found)
	v.forget("m1")
	if _, ok := v.recent("m1", "team", "baseline", t0, time.Minute); ok {
		t.Error("a member forgotten keeps its verdicts")
	}
}
