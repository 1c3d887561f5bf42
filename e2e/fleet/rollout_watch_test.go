//go:build e2e

package fleet

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/hubpolicy"
	"github.com/rayfleet/rayfleet/shared/localfleet/auditlog"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// memberAuditPolicy logs who wrote a RayService on a member and when (no bodies, no status
// writes, nothing else), so that the rollout tests can count the hub's writes of the copies.
const memberAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, update, patch, delete]
  resources:
  - group: ray.io
    resources: [rayservices]
- level: None
`

// Sources of a timeline's states.
const (
	sourceHub     = "hub"     // the hub RayService
	sourceBinding = "binding" // its RayServiceBinding
	// A member copy's source is the member's name.
)

// observed is one state of a watched object, stamped when this process received it.
type observed struct {
	at     time.Time
	source string
	// event is how the state arrived: Added, Modified or Deleted (the object's last state).
	event watch.EventType
	obj   client.Object
}

// timeline records every state of a few objects on several API servers, in the order this
// process receives them: a poll can miss a state the hub holds for a moment (RollingBack) and
// cannot tell what came first on two clusters.
type timeline struct {
	mu     sync.Mutex
	states []observed
}

// watchRollout records the hub RayService ns/name, its binding and its copies on members from
// now until the end of the test.
func watchRollout(t *testing.T, ns, name string, members ...string) *timeline {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tl := &timeline{}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	start := func(source string, cfg *rest.Config, list client.ObjectList) {
		wg.Go(func() { tl.follow(ctx, t, source, cfg, list, ns, name) })
	}
	start(sourceHub, fleet.Hub.Config, &rayv1.RayServiceList{})
	start(sourceBinding, fleet.Hub.Config, &fleetv1alpha1.RayServiceBindingList{})
	for _, m := range members {
		start(m, fleet.Members[m].Config, &rayv1.RayServiceList{})
	}
	return tl
}

// follow watches the object ns/name of list's kind until ctx ends, watching again from the
// last state seen when the API server closes the watch.
func (tl *timeline) follow(ctx context.Context, t *testing.T, source string, cfg *rest.Config, list client.ObjectList, ns, name string) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: localcluster.Scheme})
	if err != nil {
		t.Errorf("watch client for %s: %v", source, err)
		return
	}
	rv := ""
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, list, client.InNamespace(ns), client.MatchingFields{"metadata.name": name},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("watching %s %s/%s: %v", source, ns, name, err)
			}
			return
		}
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(client.Object)
			if !ok || ev.Type == watch.Error || ev.Type == watch.Bookmark {
				continue
			}
			rv = obj.GetResourceVersion()
			tl.mu.Lock()
			tl.states = append(tl.states, observed{at: time.Now(), source: source, event: ev.Type, obj: obj})
			tl.mu.Unlock()
		}
		w.Stop()
	}
}

// snapshot is every state recorded so far, in the order received.
func (tl *timeline) snapshot() []observed {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.states)
}

// of is the states of one source among states, in order.
func of(states []observed, source string) []observed {
	var out []observed
	for _, s := range states {
		if s.source == source {
			out = append(out, s)
		}
	}
	return out
}

// bindingOf is a binding state's object.
func bindingOf(s observed) *fleetv1alpha1.RayServiceBinding {
	b, _ := s.obj.(*fleetv1alpha1.RayServiceBinding)
	return b
}

// rayServiceOf is a hub RayService's or a copy's state's object.
func rayServiceOf(s observed) *rayv1.RayService {
	rs, _ := s.obj.(*rayv1.RayService)
	return rs
}

// hubUsername is who the hub acts as on a member (the ServiceAccount `rayfleet join` makes).
var hubUsername = hubpolicy.HubUsername(hubaccess.DefaultNamespace, hubaccess.ServiceAccountName)

// writeCount is how many writes of one object an audit log shows: attempted, and accepted.
type writeCount struct {
	attempted, accepted int
	verbs               map[string]int
	// first is when the API server received the first write of each verb.
	first map[string]time.Time
}

// hubWrites counts the hub's writes of the member copy ns/name received by the member's API
// server in [from, to), from its audit log (see memberAuditPolicy).
func hubWrites(t *testing.T, member, ns, name string, from, to time.Time) writeCount {
	t.Helper()
	count := writeCount{verbs: map[string]int{}, first: map[string]time.Time{}}
	err := auditlog.Read(fleet.Members[member].AuditLogPath(), false, func(ev auditlog.Event) {
		ref := ev.ObjectRef
		at := ev.RequestReceivedTimestamp
		if !ev.Completed() || ev.User.Username != hubUsername ||
			ref.Resource != "rayservices" || ref.Subresource != "" || ref.Namespace != ns || ref.Name != name ||
			at.Before(from) || !at.Before(to) {
			return
		}
		count.attempted++
		count.verbs[ev.Verb]++
		if _, seen := count.first[ev.Verb]; !seen {
			count.first[ev.Verb] = at
		}
		if ev.ResponseStatus != nil && ev.Code() < 300 {
			count.accepted++
		}
	})
	if err != nil {
		t.Fatalf("the audit log of %s: %v", member, err)
	}
	return count
}

// String says the count in words for the test log.
func (c writeCount) String() string {
	verbs := make([]string, 0, len(c.verbs))
	for _, v := range slices.Sorted(maps.Keys(c.verbs)) {
		verbs = append(verbs, fmt.Sprintf("%s %d", v, c.verbs[v]))
	}
	return fmt.Sprintf("%d accepted of %d (%s)", c.accepted, c.attempted, strings.Join(verbs, ", "))
}
