//go:build e2e

package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/auditlog"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// cRewatchDelay is how long a watch that could not be opened (its API server is down) waits
// before trying again.
const cRewatchDelay = time.Second

// cEvent is one event of a watched kind, stamped when this process received it. An event with
// an empty Type announces a fresh listing: what the handler knew of the source is stale and
// the listing's Added events follow.
type cEvent struct {
	At     time.Time
	Source string
	Type   watch.EventType
	Obj    client.Object
}

// cWatch follows every object of list's kind in ns ("" for all namespaces) on the cluster of
// cfg, calling handle for each event in the order the API server sent them, until the test
// ends or the returned stop is called (stop waits for the handler's last call). A closed watch
// resumes from the last resource version seen; one the API server refuses (expired, or the
// server is down) lists afresh. handle must not block for long.
func cWatch(t *testing.T, source string, cfg *rest.Config, list client.ObjectList, ns string, opts []client.ListOption,
	handle func(cEvent),
) (stop func()) {
	t.Helper()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: localcluster.Scheme})
	if err != nil {
		t.Fatalf("watch client for %s: %v", source, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { cFollow(ctx, c, source, list, ns, opts, handle) })
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	return stop
}

// cFollow is cWatch's loop.
func cFollow(ctx context.Context, c client.WithWatch, source string, list client.ObjectList, ns string,
	opts []client.ListOption, handle func(cEvent),
) {
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			handle(cEvent{At: time.Now(), Source: source})
		}
		all := append([]client.ListOption{client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}}}, opts...)
		w, err := c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), all...)
		if err != nil {
			rv = ""
			select {
			case <-ctx.Done():
			case <-time.After(cRewatchDelay):
			}
			continue
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				// Mostly 410 Gone: the resource version is too old to resume from.
				rv = ""
				break
			}
			obj, ok := ev.Object.(client.Object)
			if !ok || ev.Type == watch.Bookmark {
				continue
			}
			rv = obj.GetResourceVersion()
			handle(cEvent{At: time.Now(), Source: source, Type: ev.Type, Obj: obj})
		}
		w.Stop()
	}
}

// cSmallRayService is a hub RayService placed by policy that needs little: a head of 10m CPU
// and 64Mi and no workers, so that hundreds fit on the local fleet's members.
func cSmallRayService(ns, name, policy string) *rayv1.RayService {
	rs := raybuilder.MakeRayService(name, ns).ReplicaBounds(0, 0, 1).Replicas(0, 0).
		Annotation(labels.PlacementPolicy, policy).Obj()
	rs.UID, rs.Generation = "", 0
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	spec := &rs.Spec.RayClusterSpec
	spec.HeadGroupSpec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: small, Limits: small}
	for i := range spec.WorkerGroupSpecs {
		spec.WorkerGroupSpecs[i].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: small, Limits: small}
	}
	return rs
}

// cCreateNamespace creates ns on the hub (the hub creates it on members itself).
func cCreateNamespace(t *testing.T, f *localfleet.Fleet, ns string) {
	t.Helper()
	err := f.Hub.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s on the hub: %v", ns, err)
	}
}

// cCreatePolicy creates the PlacementPolicy ns/name on the hub.
func cCreatePolicy(t *testing.T, f *localfleet.Fleet, ns, name string, spec fleetv1alpha1.PlacementPolicySpec) {
	t.Helper()
	pp := &fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	if err := f.Hub.Client.Create(t.Context(), pp); err != nil {
		t.Fatalf("creating PlacementPolicy %s/%s: %v", ns, name, err)
	}
}

// cSpecHash is the hub's hash of a RayService spec, as the fleet.rayfleet.io/spec-hash
// annotation and the binding's specHash carry it: the hex SHA-256 of the spec's JSON.
func cSpecHash(spec *rayv1.RayServiceSpec) string {
	data, err := json.Marshal(spec)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// cReady reports whether a RayService (hub or copy) has Ready True.
func cReady(rs *rayv1.RayService) bool {
	return meta.IsStatusConditionTrue(rs.Status.Conditions, string(rayv1.RayServiceReady))
}

// cMemberReady reports whether a MemberCluster has Ready True.
func cMemberReady(mc *fleetv1alpha1.MemberCluster) bool {
	return meta.IsStatusConditionTrue(mc.Status.Conditions, fleetv1alpha1.ConditionReady)
}

// cWrites counts writes from a member's audit log.
type cWrites struct {
	// Spec and Status are accepted writes of the objects and of their status subresource.
	Spec, Status int
}

// cHubRayServiceWrites counts the hub's accepted writes of RayServices in ns on member,
// received in [from, to), from the member's audit log (memberAuditPolicy).
func cHubRayServiceWrites(t *testing.T, f *localfleet.Fleet, member, ns string, from, to time.Time) cWrites {
	t.Helper()
	var n cWrites
	err := auditlog.Read(f.Members[member].AuditLogPath(), true, func(ev auditlog.Event) {
		ref, at := ev.ObjectRef, ev.RequestReceivedTimestamp
		if !ev.Completed() || ev.User.Username != hubOnMember || ref.Resource != "rayservices" ||
			ref.Namespace != ns || at.Before(from) || !at.Before(to) || ev.Code() == 0 || ev.Code() >= 300 {
			return
		}
		if ref.Subresource == "status" {
			n.Status++
		} else {
			n.Spec++
		}
	})
	if err != nil {
		t.Fatalf("the audit log of %s: %v", member, err)
	}
	return n
}

// cGet fetches url with a short timeout and returns its body.
func cGet(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, nil
}

// cGoroutines reads the total of a process's goroutine profile from its pprof endpoint (base
// http://host:port): the first line of /debug/pprof/goroutine?debug=1 says
// "goroutine profile: total N".
func cGoroutines(ctx context.Context, base string) (int, error) {
	body, err := cGet(ctx, base+"/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, err
	}
	first, _, _ := strings.Cut(string(body), "\n")
	total, ok := strings.CutPrefix(first, "goroutine profile: total ")
	if !ok {
		return 0, fmt.Errorf("unexpected goroutine profile header %q", first)
	}
	return strconv.Atoi(strings.TrimSpace(total))
}

// cMetricSum sums every series of the metric name on a Prometheus text endpoint; an absent
// metric (a counter never incremented has no series) sums to 0.
func cMetricSum(ctx context.Context, url, name string) (float64, error) {
	body, err := cGet(ctx, url)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	for line := range strings.SplitSeq(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		fields := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("metric %s: parsing %q: %w", name, line, err)
		}
		sum += v
	}
	return sum, nil
}

// cCreateAll creates objs on the hub with a few creators at once, retrying each create until it
// succeeds (AlreadyExists counts: an earlier attempt got through) or ctx ends, so that the
// creation survives an outage of the hub's API server. It returns the creates that failed
// before succeeding, and the first error it gave up on.
func cCreateAll(ctx context.Context, f *localfleet.Fleet, objs []client.Object, creators int) (retried int, err error) {
	var mu sync.Mutex
	next := make(chan client.Object)
	var wg sync.WaitGroup
	for range creators {
		wg.Go(func() {
			for obj := range next {
				n, createErr := cCreateRetrying(ctx, f, obj)
				mu.Lock()
				retried += n
				if createErr != nil && err == nil {
					err = createErr
				}
				mu.Unlock()
			}
		})
	}
	for _, obj := range objs {
		next <- obj
	}
	close(next)
	wg.Wait()
	return retried, err
}

// cCreateRetrying creates obj on the hub, retrying every half second until it exists; failed
// counts the attempts that failed.
func cCreateRetrying(ctx context.Context, f *localfleet.Fleet, obj client.Object) (failed int, err error) {
	for {
		err = f.Hub.Client.Create(ctx, obj.DeepCopyObject().(client.Object))
		if err == nil || apierrors.IsAlreadyExists(err) {
			return failed, nil
		}
		failed++
		select {
		case <-ctx.Done():
			return failed, fmt.Errorf("creating %s/%s on the hub: %w (last: %w)", obj.GetNamespace(), obj.GetName(), ctx.Err(), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// cTolerate is a failover policy that keeps RayServices on a member not Ready for up to
// seconds.
func cTolerate(seconds int64) *fleetv1alpha1.FailoverPolicy {
	return &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To(seconds)}
}
