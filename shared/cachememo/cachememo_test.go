package cachememo

import (
	"fmt"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestStatuses(t *testing.T) {
	cluster := func(uid types.UID, ready int32) *rayv1.RayCluster {
		return &rayv1.RayCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "ns", UID: uid},
			Status:     rayv1.RayClusterStatus{ReadyWorkerReplicas: ready},
		}
	}
	key := types.NamespacedName{Namespace: "ns", Name: "rc"}
	tests := []struct {
		name      string
		cached    *rayv1.RayCluster
		wantReady int32
		wantKept  bool
	}{
		{"stale cache gets the written status", cluster("a", 2), 1, true},
		{"caught-up cache drops the memory", cluster("a", 1), 1, false},
		{"a recreated object is another object", cluster("b", 2), 2, false},
	}
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewStatuses(clk, (*rayv1.RayClusterStatus).DeepCopy)
			written := cluster("a", 1)
			m.Remember(written, &written.Status)
			written.Status.ReadyWorkerReplicas = 9 // the memory holds a copy
			m.Apply(tt.cached, &tt.cached.Status)
			if tt.cached.Status.ReadyWorkerReplicas != tt.wantReady {
				t.Fatalf("ready = %d, want %d", tt.cached.Status.ReadyWorkerReplicas, tt.wantReady)
			}
			if _, kept := m.written[key]; kept != tt.wantKept {
				t.Fatalf("remembered = %v, want %v", kept, tt.wantKept)
			}
		})
	}
	m := NewStatuses(clk, (*rayv1.RayClusterStatus).DeepCopy)
	rc := cluster("a", 1)
	m.Remember(rc, &rc.Status)
	m.Forget(key)
	if len(m.written) != 0 {
		t.Fatal("Forget must drop the memory")
	}

	// A write CacheLag old is no longer trusted over the cache.
	m.Remember(rc, &rc.Status)
	clk.Step(CacheLag)
	stale := cluster("a", 2)
	if m.Apply(stale, &stale.Status); stale.Status.ReadyWorkerReplicas != 2 || len(m.written) != 0 {
		t.Fatalf("after CacheLag: ready = %d, remembered %d; want the cache's 2 and nothing remembered",
			stale.Status.ReadyWorkerReplicas, len(m.written))
	}

	// Entries of objects never read again go once they are CacheLag old and the memory grows.
	for i := range sweepAt {
		old := cluster("a", 1)
		old.Name = fmt.Sprint("old", i)
		m.Remember(old, &old.Status)
	}
	clk.Step(CacheLag)
	m.Remember(rc, &rc.Status)
	if len(m.written) != 1 {
		t.Fatalf("after a sweep: %d remembered, want 1", len(m.written))
	}

	// Fresh entries stay; the next sweep waits until the memory doubled.
	for i := range sweepAt {
		fresh := cluster("a", 1)
		fresh.Name = fmt.Sprint("fresh", i)
		m.Remember(fresh, &fresh.Status)
	}
	if len(m.written) != sweepAt+1 || m.nextSweep != 2*sweepAt {
		t.Fatalf("fresh entries: %d remembered, next sweep at %d; want %d and %d", len(m.written), m.nextSweep, sweepAt+1, 2*sweepAt)
	}
}

func TestWrites(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
	m := NewWrites(clk)
	if m.Recent("k", "true") {
		t.Fatal("nothing written yet")
	}
	m.Note("k", "true")
	for _, tc := range []struct {
		step  time.Duration
		value string
		want  bool
	}{
		{0, "true", true},
		{0, "false", false}, // another value is not covered by the memory
		{CacheLag - time.Second, "true", true},
		{time.Second, "true", false}, // expired: the cache is believed again
	} {
		clk.Step(tc.step)
		if got := m.Recent("k", tc.value); got != tc.want {
			t.Errorf("after %v Recent(k, %q) = %v, want %v", tc.step, tc.value, got, tc.want)
		}
	}
	for i := range sweepAt {
		m.Note(fmt.Sprint("old", i), "v")
	}
	clk.Step(CacheLag)
	m.Note("fresh", "v")
	if len(m.written) != 1 {
		t.Errorf("after a sweep %d entries remain, want 1", len(m.written))
	}
}
