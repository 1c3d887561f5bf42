package fleet

import (
	"context"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// addCounter counts Add; every other method panics (nil embedded interface).
type addCounter struct {
	workqueue.TypedRateLimitingInterface[mcreconcile.Request]
	added []mcreconcile.Request
}

func (q *addCounter) Add(req mcreconcile.Request) { q.added = append(q.added, req) }

// memberCopy is the hub's copy of bench/svc at resourceVersion rv; foreign drops the origin
// labels.
func memberCopy(rv string, foreign bool) *rayv1.RayService {
	c := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "svc", ResourceVersion: rv}}
	if !foreign {
		c.Labels = map[string]string{labels.OriginNamespace: "bench", labels.OriginName: "svc"}
	}
	return c
}

func TestCopyToOriginSkipsOwnWrites(t *testing.T) {
	r := &Reconciler{memory: memory{ownWrites: newOwnWrites()}}
	svc := client.ObjectKeyFromObject(memberCopy("", false))
	wrote := func(cluster, rv string) func() {
		return func() {
			r.ownWrites.start(cluster, svc)
			r.ownWrites.done(cluster, svc, rv)
		}
	}
	type step struct {
		name string
		// do acts on the record (a write answered, a member leaving) before the event, if set.
		do func()
		// cluster and ev: the watch event delivered; want: whether it queued the hub RayService.
		cluster string
		ev      string
		obj     client.Object
		want    bool
	}
	steps := []step{
		{name: "the hub's create coming back", do: wrote("eu", "5"),
			cluster: "eu", ev: "create", obj: memberCopy("5", false)},
		{name: "the spoke's status after it", cluster: "eu", ev: "update", obj: memberCopy("6", false), want: true},
		{name: "the same version on another member", do: wrote("eu", "7"),
			cluster: "us", ev: "update", obj: memberCopy("7", false), want: true},
		{name: "the hub's spec update coming back", cluster: "eu", ev: "update", obj: memberCopy("7", false)},
		{name: "an echo is recognised once (a resync repeats it)", cluster: "eu", ev: "update", obj: memberCopy("7", false), want: true},
		{name: "a version no write of the hub's stored", cluster: "eu", ev: "update", obj: memberCopy("8", false), want: true},
		{name: "a deletion always reconciles", do: wrote("eu", "9"),
			cluster: "eu", ev: "delete", obj: memberCopy("9", false), want: true},
		{name: "and forgets the write", cluster: "eu", ev: "create", obj: memberCopy("9", false), want: true},
		{name: "a member leaving forgets its writes", do: func() {
			wrote("eu", "10")()
			r.ownWrites.forgetCluster("eu")
		}, cluster: "eu", ev: "create", obj: memberCopy("10", false), want: true},
		{name: "a foreign RayService queues nothing", cluster: "eu", ev: "update", obj: memberCopy("11", true)},
		{name: "a generic event reconciles", cluster: "eu", ev: "generic", obj: memberCopy("12", false), want: true},
	}
	ctx := context.Background()
	for _, s := range steps {
		if s.do != nil {
			s.do()
		}
		q := &addCounter{}
		h := r.copyToOrigin(multicluster.ClusterName(s.cluster), nil)
		switch s.ev {
		case "create":
			h.Create(ctx, event.CreateEvent{Object: s.obj}, q)
		case "update":
			h.Update(ctx, event.UpdateEvent{ObjectOld: memberCopy("1", false), ObjectNew: s.obj}, q)
		case "delete":
			h.Delete(ctx, event.DeleteEvent{Object: s.obj}, q)
		case "generic":
			h.Generic(ctx, event.GenericEvent{Object: s.obj}, q)
		}
		if got := len(q.added) == 1; got != s.want {
			t.Errorf("%s: queued = %v, want %v", s.name, got, s.want)
		}
		if len(q.added) == 1 && (q.added[0].Name != "svc" || q.added[0].Namespace != "bench" || q.added[0].ClusterName != localCluster) {
			t.Errorf("%s: queued %v, want bench/svc on the local cluster", s.name, q.added[0])
		}
	}
}

// TestEventBeforeTheAnswer covers a copy's watch event arriving while the hub's write of it
// awaits the member's answer: it waits for the answer, and reconciles only if it was not that
// write's own.
func TestEventBeforeTheAnswer(t *testing.T) {
	svc := client.ObjectKeyFromObject(memberCopy("", false))
	tests := []struct {
		name string
		// events are the resourceVersions the watch delivers before the answer.
		events []string
		// stored is the answer's resourceVersion, "" for a failed write.
		stored string
		want   int
	}{
		{name: "the write's own creation", events: []string{"5"}, stored: "5", want: 0},
		{name: "an earlier change, then the write's own", events: []string{"4", "5"}, stored: "5", want: 0},
		{name: "a later change (the spoke's status)", events: []string{"5", "6"}, stored: "5", want: 1},
		{name: "the write failed", events: []string{"4"}, stored: "", want: 1},
		{name: "no event before the answer", stored: "5", want: 0},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{memory: memory{ownWrites: newOwnWrites()}}
			h := r.copyToOrigin("eu", nil)
			q := &addCounter{}
			r.ownWrites.start("eu", svc)
			for _, rv := range tt.events {
				h.Update(ctx, event.UpdateEvent{ObjectOld: memberCopy("1", false), ObjectNew: memberCopy(rv, false)}, q)
			}
			if len(q.added) != 0 {
				t.Fatalf("queued %d before the answer, want 0", len(q.added))
			}
			r.ownWrites.done("eu", svc, tt.stored)
			if len(q.added) != tt.want {
				t.Errorf("queued %d after the answer, want %d", len(q.added), tt.want)
			}
			// Once answered, the write's echo (if it has not come yet) is recognised once.
			h.Update(ctx, event.UpdateEvent{ObjectOld: memberCopy("1", false), ObjectNew: memberCopy("9", false)}, q)
			if len(q.added) != tt.want+1 {
				t.Errorf("a later version queued %d in all, want %d", len(q.added), tt.want+1)
			}
		})
	}
}
