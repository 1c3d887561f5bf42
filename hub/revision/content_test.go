package revision

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// Contents that mean the same hash the same, however their maps were filled or their patches
// written.
func TestHashEqual(t *testing.T) {
	withParams := func(keys ...string) *Content {
		c := content()
		c.Spec.RayClusterSpec.HeadGroupSpec.RayStartParams = map[string]string{}
		for _, k := range keys {
			c.Spec.RayClusterSpec.HeadGroupSpec.RayStartParams[k] = k + "-v"
		}
		return c
	}
	tests := []struct {
		name string
		a, b *Content
	}{
		{"spec maps filled in opposite orders",
			withParams("num-cpus", "dashboard-host", "metrics-export-port"),
			withParams("metrics-export-port", "dashboard-host", "num-cpus")},
		{"patch keys in another order",
			content(override("eu", `{"serveConfigV2":"x","rayClusterConfig":{"rayVersion":"2.52.0","enableInTreeAutoscaling":true}}`)),
			content(override("eu", `{"rayClusterConfig":{"enableInTreeAutoscaling":true,"rayVersion":"2.52.0"},"serveConfigV2":"x"}`))},
		{"patch whitespace",
			content(override("eu", `{"rayClusterConfig":{"rayVersion":"2.52.0"}}`)),
			content(override("eu", "{ \"rayClusterConfig\" :\n\t{ \"rayVersion\": \"2.52.0\" } }\n"))},
		{"patch string escapes",
			content(override("eu", `{"serveConfigV2":"A<b>"}`)),
			content(override("eu", `{"serveConfigV2":"\u0041\u003cb\u003e"}`))},
		{"nil and empty overrides",
			&Content{Spec: content().Spec},
			&Content{Spec: content().Spec, Overrides: []fleetv1alpha1.ClusterOverride{}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if a, b := mustHash(t, tc.a), mustHash(t, tc.b); a != b {
				t.Errorf("equal contents hash differently: %s vs %s", a, b)
			}
		})
	}
}

// Every change to the spec or to the overrides in effect is a new revision.
func TestHashDiffers(t *testing.T) {
	eu := override("eu", `{"rayClusterConfig":{"rayVersion":"2.52.0"}}`)
	us := override("us", `{"serveConfigV2":"x"}`)
	tests := []struct {
		name    string
		content *Content
	}{
		{"image", func() *Content {
			c := content(eu)
			c.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.99.0"
			return c
		}()},
		{"worker replicas", func() *Content {
			c := content(eu)
			c.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](3)
			return c
		}()},
		{"upgrade strategy", func() *Content {
			c := content(eu)
			c.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.RayServiceUpgradeNone)}
			return c
		}()},
		{"no overrides", content()},
		{"override added", content(eu, us)},
		{"overrides reordered", content(us, eu)},
		{"patch value", content(override("eu", `{"rayClusterConfig":{"rayVersion":"2.53.0"}}`))},
		{"selector", content(override("ap", `{"rayClusterConfig":{"rayVersion":"2.52.0"}}`))},
		// 1.0 is not an int32; it must not pass for a patch that says 1.
		{"number as written", content(override("eu", `{"rayClusterDeletionDelaySeconds":1.0}`))},
		{"number", content(override("eu", `{"rayClusterDeletionDelaySeconds":1}`))},
	}
	seen := map[string]string{mustHash(t, content(eu)): "base"}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := mustHash(t, tc.content)
			if prev, dup := seen[h]; dup {
				t.Errorf("hash %s equals that of %q", h, prev)
			}
			seen[h] = tc.name
		})
	}
}

func TestHashFormatAndErrors(t *testing.T) {
	if h := mustHash(t, content()); !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(h) {
		t.Errorf("hash %q is not 64 lowercase hex characters", h)
	}
	if h, err := Hash(nil); err == nil {
		t.Errorf("Hash(nil) = %q, want an error", h)
	}
	for _, patch := range []string{`{"a":`, `{"a":1} {"b":2}`} {
		_, err := Hash(content(override("eu", "{}"), override("us", patch)))
		if err == nil || !strings.Contains(err.Error(), "overrides[1].patch") {
			t.Errorf("Hash with patch %q: error %v, want one naming overrides[1].patch", patch, err)
		}
	}
}

func TestName(t *testing.T) {
	hash := strings.Repeat("0123456789abcdef", 4)
	tests := []struct {
		name, rayService, hash, want string
	}{
		{"short name", "svc", hash, "svc-0123456789"},
		{"longest placeable name", strings.Repeat("a", 47), hash, strings.Repeat("a", 47) + "-0123456789"},
		{"short hash kept whole", "svc", "abc", "svc-abc"},
		{"too long for a subdomain", strings.Repeat("a", 253), hash, strings.Repeat("a", 242) + "-0123456789"},
		{"cut at a dot", strings.Repeat("a", 241) + ".b", hash, strings.Repeat("a", 241) + "-0123456789"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Name(tc.rayService, tc.hash)
			if got != tc.want {
				t.Errorf("Name = %q, want %q", got, tc.want)
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
				t.Errorf("Name = %q is not a DNS subdomain: %v", got, errs)
			}
		})
	}
}

func TestNew(t *testing.T) {
	hub := hubRayService("svc")
	c := content(override("eu", `{"rayClusterConfig":{"rayVersion":"2.52.0"}}`))
	cr, err := New(hub, c, 3, testScheme(t))
	if err != nil {
		t.Fatal(err)
	}
	want := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:      Name("svc", mustHash(t, c)),
			Namespace: "ns",
			Labels:    map[string]string{labels.OriginName: "svc", labels.OriginUID: string(hub.UID)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: rayv1.GroupVersion.String(), Kind: "RayService", Name: "svc", UID: hub.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Revision: 3,
	}
	if diff := cmp.Diff(want, cr, cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Data" }, cmp.Ignore())); diff != "" {
		t.Errorf("New (-want +got):\n%s", diff)
	}
	decoded, err := Decode(cr)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, decoded); diff != "" {
		t.Errorf("Decode(New(c)) differs from c (-c +decoded):\n%s", diff)
	}
	if got := mustHash(t, decoded); got != mustHash(t, c) {
		t.Errorf("decoded content hashes %s, want %s", got, mustHash(t, c))
	}
}

func TestNewRefuses(t *testing.T) {
	tooLarge := fmt.Sprintf("the RayService spec and overrides take %d bytes; a revision holds at most %d",
		MaxContentBytes+1, MaxContentBytes)
	noRay := runtime.NewScheme()
	tests := []struct {
		name    string
		c       *Content
		number  int64
		scheme  *runtime.Scheme
		wantErr string
	}{
		{"revision 0", content(), 0, testScheme(t), "revision numbers start at 1"},
		{"one byte too large", contentOfSize(t, MaxContentBytes+1), 1, testScheme(t), tooLarge},
		{"a scheme without ray.io", content(), 1, noRay, "RayService"},
		{"nil content", nil, 1, testScheme(t), "nil"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cr, err := New(hubRayService("svc"), tc.c, tc.number, tc.scheme)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New = %v, %v; want an error containing %q", cr != nil, err, tc.wantErr)
			}
		})
	}
	_, err := New(hubRayService("svc"), contentOfSize(t, MaxContentBytes+1), 1, testScheme(t))
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Bytes != MaxContentBytes+1 || tl.Limit != MaxContentBytes {
		t.Errorf("New of a content too large: error %v, want a *TooLargeError with the size and the limit", err)
	}
	if _, err := New(hubRayService("svc"), contentOfSize(t, MaxContentBytes), 1, testScheme(t)); err != nil {
		t.Errorf("New of a content of exactly MaxContentBytes: %v", err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	tests := []struct {
		name, data, wantErr string
	}{
		{"no data", "", "holds no data"},
		{"not JSON", "{", "unexpected end of JSON"},
		{"not a content", `{"spec":"a string"}`, "cannot unmarshal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc-1"}}
			cr.Data.Raw = []byte(tc.data)
			c, err := Decode(cr)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "ns/svc-1") {
				t.Errorf("Decode = %v, %v; want an error naming ns/svc-1 and containing %q", c, err, tc.wantErr)
			}
		})
	}
}
