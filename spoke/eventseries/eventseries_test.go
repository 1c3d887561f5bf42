package eventseries

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/rayfleet/rayfleet/shared/testing/eventrecorder"
)

// emission is one event about cm at a resourceVersion, after the clock moved by after.
type emission struct {
	after   time.Duration
	version string
	note    string
}

func TestRegardingVersions(t *testing.T) {
	tests := []struct {
		name  string
		emits []emission
		// want is the regarding resourceVersion each event reaches the broadcaster with.
		want []string
	}{
		{
			name:  "repeats keep the first emission's version",
			emits: []emission{{0, "1", "a"}, {time.Second, "2", "a"}, {time.Minute, "3", "a"}},
			want:  []string{"1", "1", "1"},
		},
		{
			name:  "another message starts at the current version",
			emits: []emission{{0, "1", "a"}, {time.Second, "2", "b"}, {time.Second, "3", "a"}, {time.Second, "4", "b"}},
			want:  []string{"1", "2", "1", "2"},
		},
		{
			name:  "a message idle for longer than the broadcaster's series starts again",
			emits: []emission{{0, "1", "a"}, {idle, "2", "a"}, {time.Second, "3", "a"}},
			want:  []string{"1", "2", "2"},
		},
		{
			name:  "repeats keep the series alive",
			emits: []emission{{0, "1", "a"}, {idle - time.Second, "2", "a"}, {idle - time.Second, "3", "a"}},
			want:  []string{"1", "1", "1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
			fake := eventrecorder.New(t, scheme.Scheme)
			rec := newRecorder(fake, scheme.Scheme, clk)
			related := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns", ResourceVersion: "9"}}
			for _, e := range tt.emits {
				clk.SetTime(clk.Now().Add(e.after))
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", ResourceVersion: e.version}}
				rec.Eventf(cm, related, corev1.EventTypeNormal, "Updated", "Update", "note %s", e.note)
			}
			events := fake.Events()
			if len(events) != len(tt.want) {
				t.Fatalf("%d events recorded, want %d", len(events), len(tt.want))
			}
			for i, e := range events {
				if e.Key.Regarding.ResourceVersion != tt.want[i] {
					t.Errorf("event %d (%s) regards version %q, want %q", i, e.Note, e.Key.Regarding.ResourceVersion, tt.want[i])
				}
				if e.Key.Related.Name != "svc" || e.Key.Related.ResourceVersion != "9" {
					t.Errorf("event %d: related %+v, want Service svc at version 9", i, e.Key.Related)
				}
			}
		})
	}
}

// TestForgetsIdleMessages checks that the record of first emissions does not grow without end.
func TestForgetsIdleMessages(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(0, 0))
	rec := newRecorder(eventrecorder.New(t, scheme.Scheme), scheme.Scheme, clk)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", ResourceVersion: "1"}}
	for _, note := range []string{"a", "b", "c"} {
		rec.Eventf(cm, nil, corev1.EventTypeNormal, "Updated", "Update", "%s", note)
	}
	clk.SetTime(clk.Now().Add(idle))
	rec.Eventf(cm, nil, corev1.EventTypeNormal, "Updated", "Update", "d")
	if got := len(rec.firsts); got != 1 {
		t.Fatalf("%d messages remembered after the others were idle for %v, want 1", got, idle)
	}
}
