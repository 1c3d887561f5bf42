package rayservice

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/spoke/rayservice/serve"
)

func TestRunningPatch(t *testing.T) {
	const cfg, newCfg = "applications: []\n", "applications:\n- name: a\n  import_path: a.app\n"
	serveHash, newServeHash := rayspec.ServeConfigHash(cfg), rayspec.ServeConfigHash(newCfg)
	built := func(hash string) *rayv1.RayCluster {
		rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "svc-abcde"}}
		if hash != "" {
			rc.Annotations = map[string]string{labels.HashWithoutReplicas: hash}
		}
		return rc
	}
	running := func(cluster, serveConfig string) map[string]string {
		return map[string]string{"note": "x", labels.RunningClusterHash: cluster, labels.RunningServeConfigHash: serveConfig}
	}
	tests := []struct {
		name    string
		current map[string]string
		active  *rayv1.RayCluster
		applied *serve.Submitted
		// replicas is the RunningReplicas value decided for active.
		replicas string
		want     map[string]*string
	}{
		{name: "no active cluster, nothing recorded", current: map[string]string{"note": "x"}},
		{name: "first active cluster with its config applied", current: map[string]string{"note": "x"},
			active: built("H1"), applied: &serve.Submitted{Config: cfg},
			want: map[string]*string{labels.RunningClusterHash: ptr.To("H1"), labels.RunningServeConfigHash: &serveHash}},
		{name: "steady state", current: running("H1", serveHash), active: built("H1"), applied: &serve.Submitted{Config: cfg}},
		{name: "target_capacity moved, config not", current: running("H1", serveHash), active: built("H1"),
			applied: &serve.Submitted{Config: cfg, TargetCapacity: ptr.To[int32](50)}},
		{name: "new Serve config applied: only its hash", current: running("H1", serveHash), active: built("H1"),
			applied: &serve.Submitted{Config: newCfg}, want: map[string]*string{labels.RunningServeConfigHash: &newServeHash}},
		{name: "pending cluster promoted: both", current: running("H1", serveHash), active: built("H2"),
			applied: &serve.Submitted{Config: newCfg},
			want:    map[string]*string{labels.RunningClusterHash: ptr.To("H2"), labels.RunningServeConfigHash: &newServeHash}},
		{name: "nothing remembered of the active cluster (restarted spoke): serve hash kept",
			current: running("H1", serveHash), active: built("H1")},
		{name: "nothing remembered, nothing recorded: serve hash stays absent",
			current: map[string]string{labels.RunningClusterHash: "H1"}, active: built("H1")},
		{name: "active cluster without a spec hash: cluster hash removed", current: running("H1", serveHash),
			active: built(""), applied: &serve.Submitted{Config: cfg}, want: map[string]*string{labels.RunningClusterHash: nil}},
		{name: "active cluster gone: both removed", current: running("H1", serveHash),
			want: map[string]*string{labels.RunningClusterHash: nil, labels.RunningServeConfigHash: nil}},
		{name: "replicas recorded with the rest", current: map[string]string{"note": "x"},
			active: built("H1"), applied: &serve.Submitted{Config: cfg}, replicas: `{"workers":{"g":1}}`,
			want: map[string]*string{labels.RunningClusterHash: ptr.To("H1"), labels.RunningServeConfigHash: &serveHash,
				labels.RunningReplicas: ptr.To(`{"workers":{"g":1}}`)}},
		{name: "replicas unchanged: nothing", current: withReplicas(running("H1", serveHash), `{"workers":{"g":1}}`),
			active: built("H1"), applied: &serve.Submitted{Config: cfg}, replicas: `{"workers":{"g":1}}`},
		{name: "replicas changed: only them", current: withReplicas(running("H1", serveHash), `{"workers":{"g":1}}`),
			active: built("H1"), applied: &serve.Submitted{Config: cfg}, replicas: `{"workers":{"g":2}}`,
			want: map[string]*string{labels.RunningReplicas: ptr.To(`{"workers":{"g":2}}`)}},
		{name: "no value for the replicas: removed", current: withReplicas(running("H1", serveHash), `{"workers":{"g":1}}`),
			active: built("H1"), applied: &serve.Submitted{Config: cfg},
			want: map[string]*string{labels.RunningReplicas: nil}},
		{name: "active cluster gone: replicas removed too", current: withReplicas(running("H1", serveHash), `{}`),
			want: map[string]*string{labels.RunningClusterHash: nil, labels.RunningServeConfigHash: nil, labels.RunningReplicas: nil}},
		{name: "recorded empty values are removed", current: running("", ""),
			want: map[string]*string{labels.RunningClusterHash: nil, labels.RunningServeConfigHash: nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runningPatch(tt.current, tt.active, tt.applied, tt.replicas)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

func withReplicas(annotations map[string]string, value string) map[string]string {
	annotations[labels.RunningReplicas] = value
	return annotations
}

func TestHubCopy(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"origin labels", map[string]string{labels.OriginNamespace: "ns", labels.OriginName: "svc", labels.OriginUID: "u"}, true},
		{"origin without UID (a stale copy is still the hub's)", map[string]string{labels.OriginNamespace: "ns", labels.OriginName: "svc"}, true},
		{"no labels", nil, false},
		{"name only", map[string]string{labels.OriginName: "svc"}, false},
		{"empty name", map[string]string{labels.OriginNamespace: "ns", labels.OriginName: ""}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Labels: tt.labels}}
			if got := hubCopy(rs); got != tt.want {
				t.Errorf("hubCopy = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestClusterNamed(t *testing.T) {
	active := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	pending := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	s := &scope{active: active, pending: pending}
	tests := []struct {
		name string
		want *rayv1.RayCluster
	}{
		{"a", active},
		{"p", pending}, // promoted this reconcile
		{"", nil},
		{"gone", nil},
	}
	for _, tt := range tests {
		if got := s.clusterNamed(tt.name); got != tt.want {
			t.Errorf("clusterNamed(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	if got := (&scope{}).clusterNamed("a"); got != nil {
		t.Errorf("clusterNamed with no clusters read = %v, want nil", got)
	}
}

func TestAnnotationsChanged(t *testing.T) {
	tests := []struct {
		name     string
		old, new map[string]string
		want     bool
	}{
		{"unchanged", map[string]string{"a": "1"}, map[string]string{"a": "1"}, false},
		{"user annotation changed", map[string]string{"a": "1"}, map[string]string{"a": "2"}, true},
		{"hub spec hash changed", nil, map[string]string{labels.SpecHash: "x"}, true},
		{"running annotations added (the spoke's own write)", map[string]string{"a": "1"},
			map[string]string{"a": "1", labels.RunningClusterHash: "H", labels.RunningServeConfigHash: "S"}, false},
		{"running annotation changed", map[string]string{labels.RunningClusterHash: "H1"},
			map[string]string{labels.RunningClusterHash: "H2"}, false},
		{"running annotations removed with the last other one", map[string]string{"a": "1", labels.RunningClusterHash: "H"}, nil, true},
	}
	p := annotationsChanged()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := event.UpdateEvent{
				ObjectOld: &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Annotations: tt.old}},
				ObjectNew: &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Annotations: tt.new}},
			}
			if got := p.Update(e); got != tt.want {
				t.Errorf("Update = %v, want %v", got, tt.want)
			}
		})
	}
	if !p.Create(event.CreateEvent{Object: &rayv1.RayService{}}) {
		t.Errorf("Create filtered out; only updates are compared")
	}
}
