package propagation

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// fuzzDeadline is how long one hash or one member object may take to build; both are linear in
// the spec and the patch, which the API server bounds to a few MiB.
const fuzzDeadline = 5 * time.Second

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// specSeeds are RayService specs in JSON: the test RayService, and hostile ones (huge replica
// counts, a YAML bomb as serveConfigV2, negative numbers) that the hub must hash and copy
// without trouble even though validation refuses them.
func specSeeds(f *testing.F) [][]byte {
	f.Helper()
	base := raybuilder.MakeRayService("svc", "ns")
	specs := []rayv1.RayServiceSpec{
		base.Obj().Spec,
		raybuilder.MakeRayService("svc", "ns").Replicas(0, 1<<31-1).ReplicaBounds(0, 0, 1<<31-1).Obj().Spec,
		raybuilder.MakeRayService("svc", "ns").ServeConfig("a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n").Obj().Spec,
		raybuilder.MakeRayService("svc", "ns").Replicas(0, -1).WorkerGroup("second", 3).Obj().Spec,
		{},
	}
	var out [][]byte
	for i := range specs {
		data, err := json.Marshal(&specs[i])
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, data)
	}
	return append(out, []byte(`{"serveConfigV2":"\u0000","rayClusterConfig":{"workerGroupSpecs":[{"numOfHosts":-2147483648}]}}`))
}

// FuzzSpecHash hashes arbitrary RayService specs. Whatever the spec: no error, 64 lowercase hex
// characters, the same hash twice and for a deep copy, the same hash after the spec is encoded
// and decoded again (as the API server returns it, so a copy read back is not seen as drift),
// and a different hash once serveConfigV2 changes.
func FuzzSpecHash(f *testing.F) {
	for _, seed := range specSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var spec rayv1.RayServiceSpec
		if json.Unmarshal(data, &spec) != nil {
			return
		}
		start := time.Now()
		h, err := SpecHash(&spec)
		if took := time.Since(start); took > fuzzDeadline {
			t.Fatalf("SpecHash took %v", took)
		}
		if err != nil {
			t.Fatalf("SpecHash of a decoded spec: %v", err)
		}
		if !hexHash.MatchString(h) {
			t.Fatalf("hash %q is not 64 lowercase hex characters", h)
		}
		if again, _ := SpecHash(spec.DeepCopy()); again != h {
			t.Fatalf("a deep copy hashes differently: %s, %s", h, again)
		}
		encoded, err := json.Marshal(&spec)
		if err != nil {
			t.Fatal(err)
		}
		var back rayv1.RayServiceSpec
		if err := json.Unmarshal(encoded, &back); err != nil {
			t.Fatalf("the spec's own encoding does not decode: %v", err)
		}
		if again, _ := SpecHash(&back); again != h {
			t.Fatalf("the spec hashes differently once encoded and decoded: %s, %s\n%s", h, again, encoded)
		}
		changed := spec.DeepCopy()
		changed.ServeConfigV2 += "#"
		if other, _ := SpecHash(changed); other == h {
			t.Fatal("changing serveConfigV2 does not change the hash")
		}
	})
}

// FuzzMemberRayService applies an arbitrary override (a label selector and a JSON merge patch)
// to an arbitrary hub RayService spec, as placing on a member does. Whatever the input: no
// panic, the same answer twice, the hub object unchanged, an answer within fuzzDeadline, a patch
// that is not a JSON object refused whether or not it selects the cluster; and a member object
// that is built carries its spec's hash, the hub's name and origin, and the hub's spec unchanged
// when the override does not select the cluster or patches nothing.
func FuzzMemberRayService(f *testing.F) {
	patches := []string{
		`{}`,
		`{"serveConfigV2": "applications: []"}`,
		`{"rayClusterConfig": {"workerGroupSpecs": [{"groupName": "g", "replicas": 2147483647}]}}`,
		`{"rayClusterConfig": {"headGroupSpec": null}}`,
		`{"rayClusterConfig": {"bogus": 1}}`,
		`{"serveConfigV2": null, "upgradeStrategy": {"type": "NewCluster"}}`,
		`[1, 2]`,
		`null`,
		`{"a": `,
	}
	for i, spec := range specSeeds(f) {
		for j, patch := range patches {
			clusterValue := "eu"
			if (i+j)%2 == 1 {
				clusterValue = "us"
			}
			f.Add(spec, []byte(patch), "region", "eu", clusterValue)
		}
	}
	f.Add(specSeeds(f)[0], []byte(`{}`), "bad key!", "eu", "eu")
	f.Fuzz(func(t *testing.T, specData, patch []byte, key, value, clusterValue string) {
		hub := raybuilder.MakeRayService("svc", "ns").Obj()
		hub.Labels = map[string]string{"app": "x", labels.OriginName: "forged"}
		if json.Unmarshal(specData, &hub.Spec) != nil {
			return
		}
		before := hub.DeepCopy()
		overrides := []fleetv1alpha1.ClusterOverride{{
			ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{key: value}},
			Patch:           apiextensionsv1.JSON{Raw: patch},
		}}
		clusterLabels := map[string]string{key: clusterValue}

		start := time.Now()
		member, err := MemberRayService(testHub, hub, "eu", clusterLabels, overrides)
		if took := time.Since(start); took > fuzzDeadline {
			t.Fatalf("MemberRayService took %v", took)
		}
		again, againErr := MemberRayService(testHub, hub, "eu", clusterLabels, overrides)
		if !reflect.DeepEqual(member, again) || (err == nil) != (againErr == nil) ||
			(err != nil && err.Error() != againErr.Error()) {
			t.Fatalf("MemberRayService is not deterministic: %v, then %v", err, againErr)
		}
		if !reflect.DeepEqual(before, hub) {
			t.Fatal("MemberRayService changed the hub RayService")
		}
		trimmed := bytes.TrimSpace(patch)
		if (len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed)) && err == nil {
			t.Fatalf("a patch that is not a JSON object was used: %q", patch)
		}
		if err != nil {
			if !strings.Contains(err.Error(), `RayService ns/svc on cluster "eu"`) {
				t.Fatalf("the error %q does not name the RayService and the cluster", err)
			}
			return
		}
		checkMember(t, hub, member, patch, value == clusterValue)
	})
}

// checkMember checks a member object built from hub: its hash, its name and origin, and its spec
// where the override cannot have changed it.
func checkMember(t *testing.T, hub, member *rayv1.RayService, patch []byte, selected bool) {
	t.Helper()
	hash, err := SpecHash(&member.Spec)
	if err != nil || member.Annotations[labels.SpecHash] != hash {
		t.Fatalf("the member's spec-hash annotation is %q, its spec hashes to %q (%v)", member.Annotations[labels.SpecHash], hash, err)
	}
	if member.Name != hub.Name || member.Namespace != hub.Namespace || member.Labels[labels.OriginName] != hub.Name ||
		member.Labels[labels.OriginNamespace] != hub.Namespace || member.Labels["app"] != "x" {
		t.Fatalf("the member's name or origin is wrong: %s/%s, labels %v", member.Namespace, member.Name, member.Labels)
	}
	hubHash, err := SpecHash(&hub.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if (!selected || string(bytes.TrimSpace(patch)) == "{}") && hash != hubHash {
		t.Fatalf("an override that changes nothing here changed the spec (selected %v, patch %q)", selected, patch)
	}
}
