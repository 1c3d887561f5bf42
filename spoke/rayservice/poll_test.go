package rayservice

import (
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/spoke/rayservice/internal/fixture"
	"github.com/rayfleet/rayfleet/spoke/rayservice/serve"
)

func TestPollPace(t *testing.T) {
	polls := ServePolls{}.withDefaults()
	settled := pollFacts{ready: true, running: true, sinceSubmit: -1}
	with := func(change func(*pollFacts)) pollFacts {
		f := settled
		change(&f)
		return f
	}
	tests := []struct {
		name    string
		facts   pollFacts
		want    time.Duration
		changes bool
	}{
		{"settled: every application RUNNING, Ready, no pending cluster, nothing submitted", settled, 10 * time.Second, false},
		{"settled, last submission a changing interval ago (read since)", with(func(f *pollFacts) { f.sinceSubmit = 2 * time.Second }), 10 * time.Second, false},
		{"a config submitted just now (this reconcile read before it)", with(func(f *pollFacts) { f.sinceSubmit = 0 }), 2 * time.Second, true},
		{"a config submitted 1.9 s ago", with(func(f *pollFacts) { f.sinceSubmit = 1900 * time.Millisecond }), 2 * time.Second, true},
		{"an upgrade in progress: a pending cluster", with(func(f *pollFacts) { f.pending = true }), 2 * time.Second, true},
		{"an application not RUNNING (DEPLOYING, UNHEALTHY, DEPLOY_FAILED) or none read",
			with(func(f *pollFacts) { f.running = false }), 2 * time.Second, true},
		{"the dashboard could not be read", with(func(f *pollFacts) { f.readFailed = true }), 2 * time.Second, true},
		{"not Ready: no serve endpoint", with(func(f *pollFacts) { f.ready = false }), 2 * time.Second, true},
		{"first deploy: nothing read yet, pending cluster", pollFacts{pending: true, sinceSubmit: -1}, 2 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := pollPace(tt.facts, polls)
			if got != tt.want || (why != "") != tt.changes {
				t.Fatalf("pollPace = %v, %q; want %v, changing=%v", got, why, tt.want, tt.changes)
			}
		})
	}
}

func TestServePollsDefaults(t *testing.T) {
	if got := (ServePolls{}).withDefaults(); got != (ServePolls{Changing: 2 * time.Second, Stable: 10 * time.Second}) {
		t.Errorf("defaults: %+v", got)
	}
	custom := ServePolls{Changing: time.Second, Stable: 30 * time.Second}
	if got := custom.withDefaults(); got != custom {
		t.Errorf("custom intervals changed: %+v", got)
	}
}

func TestReadCanWait(t *testing.T) {
	rs := raybuilder.MakeRayService("svc", "ns").Obj()
	rs.UID, rs.Generation = "uid-1", 3
	rc := fixture.Cluster(rs, "svc-abcde")
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	due := pollRecord{uid: "uid-1", generation: 3, cluster: "svc-abcde", next: now.Add(5 * time.Second)}
	with := func(change func(*pollRecord)) pollRecord {
		p := due
		change(&p)
		return p
	}
	tests := []struct {
		name string
		rec  pollRecord
		now  time.Time
		want bool
	}{
		{"settled, next read in 5 s", due, now, true},
		{"next read due now", due, now.Add(5 * time.Second), false},
		{"next read overdue", due, now.Add(time.Minute), false},
		{"changing: read on every reconcile", with(func(p *pollRecord) { p.next = time.Time{} }), now, false},
		{"spec changed since", with(func(p *pollRecord) { p.generation = 2 }), now, false},
		{"another active cluster since (promotion)", with(func(p *pollRecord) { p.cluster = "svc-fghij" }), now, false},
		{"a RayService of the same name before", with(func(p *pollRecord) { p.uid = "uid-0" }), now, false},
		{"nothing remembered (spoke restarted)", pollRecord{}, now, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rec.readCanWait(rs, rc, tt.now); got != tt.want {
				t.Fatalf("readCanWait = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPollMemo(t *testing.T) {
	m := newPollMemo()
	rs := raybuilder.MakeRayService("svc", "ns").Obj()
	rs.UID = "uid-1"
	key := types.NamespacedName{Namespace: "ns", Name: "svc"}
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m.noteSubmit(rs, at)
	if got := m.get(rs); got.submitted != at || got.uid != "uid-1" {
		t.Fatalf("after noteSubmit: %+v", got)
	}
	recreated := rs.DeepCopy()
	recreated.UID = "uid-2"
	if got := m.get(recreated); !got.submitted.IsZero() || got.uid != "uid-2" {
		t.Fatalf("a recreated RayService inherited %+v", got)
	}
	m.forget(key)
	if got := m.get(rs); !got.submitted.IsZero() {
		t.Fatalf("after forget: %+v", got)
	}
}

func TestClampRequeue(t *testing.T) {
	tests := []struct {
		d, upper, want time.Duration
	}{
		{7 * time.Second, 10 * time.Second, 7 * time.Second},
		{30 * time.Second, 10 * time.Second, 10 * time.Second},
		{0, 10 * time.Second, requeueNewCluster},
		{-time.Minute, 10 * time.Second, requeueNewCluster},
	}
	for _, tt := range tests {
		if got := clampRequeue(tt.d, tt.upper); got != tt.want {
			t.Errorf("clampRequeue(%v, %v) = %v, want %v", tt.d, tt.upper, got, tt.want)
		}
	}
}

func TestDecideProxyCheck(t *testing.T) {
	tests := []struct {
		name                                          string
		excluded, hasIP, labelled, reportedReady, due bool
		want                                          proxyCheck
	}{
		{"excludeHeadPodFromServeSvc: false without a call", true, true, true, true, true, labelFalse},
		{"no Pod IP yet: false without a call", false, false, false, false, true, labelFalse},
		{"labelled and reported ready: no call, even when a read is due", false, true, true, true, true, keepLabel},
		{"labelled and reported ready, settled", false, true, true, true, false, keepLabel},
		{"labelled, Kubernetes reports it not ready: asked at once", false, true, true, false, false, askProxy},
		{"not labelled yet, a read is due: asked", false, true, false, false, true, askProxy},
		{"not labelled (proxy failed before), settled and no read due: waits for the next read", false, true, false, true, false, keepLabel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideProxyCheck(tt.excluded, tt.hasIP, tt.labelled, tt.reportedReady, tt.due); got != tt.want {
				t.Fatalf("decideProxyCheck = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEndpointReady(t *testing.T) {
	head := types.UID("head-uid")
	ep := func(uid types.UID, ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{
			Addresses:  []string{"10.0.0.1"},
			Conditions: discoveryv1.EndpointConditions{Ready: ready},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", UID: uid},
		}
	}
	slice := func(eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
		return discoveryv1.EndpointSlice{Endpoints: eps}
	}
	tests := []struct {
		name   string
		slices []discoveryv1.EndpointSlice
		want   bool
	}{
		{"no slice (the serve Service selects another cluster)", nil, true},
		{"listed ready", []discoveryv1.EndpointSlice{slice(ep(head, ptr.To(true)))}, true},
		{"listed without a Ready condition: ready, as the API says", []discoveryv1.EndpointSlice{slice(ep(head, nil))}, true},
		{"listed not ready", []discoveryv1.EndpointSlice{slice(ep("worker", ptr.To(true)), ep(head, ptr.To(false)))}, false},
		{"not ready in one slice of two (dual stack)", []discoveryv1.EndpointSlice{slice(ep(head, ptr.To(true))), slice(ep(head, ptr.To(false)))}, false},
		{"only another Pod not ready", []discoveryv1.EndpointSlice{slice(ep("worker", ptr.To(false)))}, true},
		{"an endpoint without a target", []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{{Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := endpointReady(tt.slices, head); got != tt.want {
				t.Fatalf("endpointReady = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPodReady(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"Ready", raybuilder.MakePod("h", "ns").Ready().Obj(), true},
		{"Ready=False", raybuilder.MakePod("h", "ns").Running().Condition(corev1.PodReady, corev1.ConditionFalse).Obj(), false},
		{"no condition yet", raybuilder.MakePod("h", "ns").Obj(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podReady(tt.pod); got != tt.want {
				t.Fatalf("podReady = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFailingProblem(t *testing.T) {
	rc := &rayv1.RayCluster{}
	rc.Name = "svc-abcde"
	tests := []struct {
		name    string
		failing []serve.FailingApp
		want    string
	}{
		{"nothing failing", nil, ""},
		{"one", []serve.FailingApp{{Name: "fruit", Status: "UNHEALTHY", Message: "health checks"}},
			"Serve application fruit on RayCluster svc-abcde is UNHEALTHY: health checks"},
		{"two, in the order given", []serve.FailingApp{{Name: "a", Status: "DEPLOY_FAILED", Message: "import"}, {Name: "b", Status: "UNHEALTHY"}},
			"Serve application a on RayCluster svc-abcde is DEPLOY_FAILED: import; Serve application b on RayCluster svc-abcde is UNHEALTHY: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := failingProblem(rc, tt.failing); got != tt.want {
				t.Fatalf("failingProblem =\n%q, want\n%q", got, tt.want)
			}
		})
	}
}
