package raycluster

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestProgressHolds(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "rc"}
	obj := func(uid types.UID) metav1.Object {
		return &metav1.ObjectMeta{Namespace: "ns", Name: "rc", UID: uid}
	}
	// Each step either asks how long the change of the object with uid may still wait
	// (remaining) or releases the hold, after the clock moved by advance.
	type step struct {
		advance time.Duration
		uid     types.UID
		release bool
		// want is remaining's answer, or release's "held for".
		want time.Duration
	}
	tests := []struct {
		name   string
		window time.Duration
		steps  []step
	}{
		{name: "the first change held starts the window", window: 10 * time.Second,
			steps: []step{{uid: "a", want: 10 * time.Second}}},
		{name: "later changes do not renew it", window: 10 * time.Second, steps: []step{
			{uid: "a", want: 10 * time.Second},
			{advance: 4 * time.Second, uid: "a", want: 6 * time.Second},
			{advance: 6 * time.Second, uid: "a", want: 0},
			{advance: time.Second, uid: "a", want: -time.Second},
		}},
		{name: "a write ends it and the next change starts anew", window: 10 * time.Second, steps: []step{
			{uid: "a", want: 10 * time.Second},
			{advance: 3 * time.Second, release: true, want: 3 * time.Second},
			{advance: time.Second, uid: "a", want: 10 * time.Second},
		}},
		{name: "releasing what is not held", window: 10 * time.Second,
			steps: []step{{release: true, want: 0}}},
		{name: "a cluster recreated under the same name is not held by the old one's window", window: 10 * time.Second, steps: []step{
			{uid: "a", want: 10 * time.Second},
			{advance: 8 * time.Second, uid: "b", want: 10 * time.Second},
		}},
		{name: "a zero window holds nothing", steps: []step{{uid: "a", want: 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(1_700_000_000, 0))
			h := newProgressHolds(clk, tt.window)
			for i, s := range tt.steps {
				clk.SetTime(clk.Now().Add(s.advance))
				var got time.Duration
				if s.release {
					got = h.release(key)
					if h.held(key) {
						t.Errorf("step %d: still held after release", i)
					}
				} else {
					got = h.remaining(obj(s.uid))
				}
				if got != s.want {
					t.Errorf("step %d: got %v, want %v", i, got, s.want)
				}
			}
		})
	}
}
