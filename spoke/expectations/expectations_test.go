package expectations

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func pod(name string, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
		p.Finalizers = []string{"test/keep"}
	}
	return p
}

func TestSatisfied(t *testing.T) {
	tests := []struct {
		name    string
		objects []client.Object
		action  Action
		elapsed time.Duration
		want    bool
	}{
		{name: "created pod seen", objects: []client.Object{pod("p", false)}, action: Create, want: true},
		{name: "created pod not seen yet", action: Create, want: false},
		{name: "created pod never seen, timed out", action: Create, elapsed: Timeout, want: true},
		{name: "deleted pod gone", action: Delete, want: true},
		{name: "deleted pod still there", objects: []client.Object{pod("p", false)}, action: Delete, want: false},
		{name: "deleted pod terminating", objects: []client.Object{pod("p", true)}, action: Delete, want: true},
		{name: "deleted pod still there long after", objects: []client.Object{pod("p", false)}, action: Delete, elapsed: time.Hour, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
			c := fake.NewClientBuilder().WithObjects(tt.objects...).Build()
			s := NewScale(clk)
			s.Expect("ns", "rc", "g", "p", tt.action)
			clk.Step(tt.elapsed)
			got, err := s.Satisfied(context.Background(), c, nil, "ns", "rc", "g")
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("Satisfied = %v, want %v", got, tt.want)
			}
			wantLen := 1
			if tt.want {
				wantLen = 0
			}
			if s.Len() != wantLen {
				t.Fatalf("pending expectations = %d, want %d", s.Len(), wantLen)
			}
		})
	}
}

func TestGroupsAreIndependentAndForgetClearsCluster(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	c := fake.NewClientBuilder().Build()
	s := NewScale(clk)
	s.Expect("ns", "rc", HeadGroup, "head", Create)
	s.Expect("ns", "rc", "g", "w", Create)
	s.Expect("ns", "other", "g", "w2", Create)

	ok, err := s.Satisfied(context.Background(), c, nil, "ns", "rc", "unrelated")
	if err != nil || !ok {
		t.Fatalf("a group without expectations must be satisfied, got %v, %v", ok, err)
	}
	ok, _ = s.Satisfied(context.Background(), c, nil, "ns", "rc", "g")
	if ok {
		t.Fatal("group g waits for its Pod")
	}
	if !s.Pending("ns", "rc") || s.Pending("ns", "nobody") {
		t.Fatal("Pending must report rc's unobserved changes only")
	}
	s.Forget("ns", "rc")
	if s.Pending("ns", "rc") {
		t.Fatal("nothing is pending after Forget")
	}
	if s.Len() != 1 {
		t.Fatalf("Forget must only drop rc's expectations, %d left", s.Len())
	}
	ok, _ = s.Satisfied(context.Background(), c, nil, "ns", "rc", "g")
	if !ok {
		t.Fatal("forgotten expectations must not block")
	}
}

func TestCreatedPodDeletedBeforeTheCacheSawIt(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	cache := fake.NewClientBuilder().Build()
	tests := []struct {
		name string
		api  client.Reader
		want bool
	}{
		{"API server lacks it too: deleted", fake.NewClientBuilder().Build(), true},
		{"API server has it: the cache lags", fake.NewClientBuilder().WithObjects(pod("p", false)).Build(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewScale(clk)
			s.Expect("ns", "rc", "g", "p", Create)
			got, err := s.Satisfied(context.Background(), cache, tt.api, "ns", "rc", "g")
			if err != nil || got != tt.want {
				t.Fatalf("Satisfied = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
