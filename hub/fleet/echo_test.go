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
		{name: "the hub's create coming back", do: func() { r.ownWrites.record("eu", memberCopy("5", false)) },
			cluster: "eu", ev: "create", obj: memberCopy("5", false)},
		{name: "the spoke's status after it", cluster: "eu", ev: "update", obj: memberCopy("6", false), want: true},
		{name: "the same version on another member", do: func() { r.ownWrites.record("eu", memberCopy("7", false)) },
			cluster: "us", ev: "update", obj: memberCopy("7", false), want: true},
		{name: "the hub's spec update coming back", cluster: "eu", ev: "update", obj: memberCopy("7", false)},
		{name: "an echo is recognised once (a resync repeats it)", cluster: "eu", ev: "update", obj: memberCopy("7", false), want: true},
		{name: "an echo arriving before the answer was recorded", cluster: "eu", ev: "update", obj: memberCopy("8", false), want: true},
		{name: "a deletion always reconciles", do: func() { r.ownWrites.record("eu", memberCopy("9", false)) },
			cluster: "eu", ev: "delete", obj: memberCopy("9", false), want: true},
		{name: "and forgets the write", cluster: "eu", ev: "create", obj: memberCopy("9", false), want: true},
		{name: "a member leaving forgets its writes", do: func() {
			r.ownWrites.record("eu", memberCopy("10", false))
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
