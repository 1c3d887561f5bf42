package devfleet

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/rayapp"
)

func TestLoadRaySample(t *testing.T) {
	s, err := LoadRaySample("rayfleet.local/ray:test")
	if err != nil {
		t.Fatal(err)
	}
	p := s.Policy.Spec
	if s.Policy.Namespace != "demo" || s.Policy.Name != "hello" || deref(p.Clusters) != 1 {
		t.Errorf("PlacementPolicy = %s/%s clusters %v, want demo/hello on one cluster", s.Policy.Namespace, s.Policy.Name, p.Clusters)
	}
	if p.Rollout == nil || p.Rollout.Type != fleetv1alpha1.RolloutBlueGreen {
		t.Errorf("rollout = %+v, want BlueGreen", p.Rollout)
	}
	if p.Traffic == nil || p.Traffic.ParentRef.Namespace != localfleet.GatewayNamespace || p.Traffic.ParentRef.Name != localfleet.GatewayName {
		t.Errorf("traffic = %+v, want the hub's Gateway", p.Traffic)
	}
	rs := s.Service
	if rs.Namespace != "demo" || rs.Name != "hello" || rs.Annotations[labels.PlacementPolicy] != "hello" {
		t.Errorf("RayService = %s/%s annotations %v, want demo/hello placed by hello", rs.Namespace, rs.Name, rs.Annotations)
	}
	if svc := rs.Spec.ServeService; svc == nil || svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		t.Errorf("serveService = %+v, want type LoadBalancer", svc)
	}
	if rs.Spec.ServeConfigV2 != rayapp.ServeConfig("v1") {
		t.Errorf("serveConfigV2 = %q, want rayapp's at v1", rs.Spec.ServeConfigV2)
	}
	if !reflect.DeepEqual(rs.Spec.RayClusterSpec, rayapp.ClusterSpec("rayfleet.local/ray:test")) {
		t.Errorf("rayClusterConfig = %+v, want rayapp's with the image given", rs.Spec.RayClusterSpec)
	}
	if cm := s.MemberConfigMap; cm == nil || cm.Namespace != "demo" || cm.Name != rayapp.ConfigMapName || cm.Data["versioned.py"] == "" {
		t.Errorf("member ConfigMap = %+v, want demo/%s with the Serve app", cm, rayapp.ConfigMapName)
	}
}

// TestRaySampleCopyReapplies checks that the copy in the state directory is the sample as
// applied: it decodes (strictly) to the same objects and keeps the comments.
func TestRaySampleCopyReapplies(t *testing.T) {
	s, err := LoadRaySample("rayfleet.local/ray:test")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(s.source, leadingComments(raySampleYAML)) || !bytes.HasPrefix(s.source, []byte("# The sample")) {
		t.Errorf("copy does not start with ray-sample.yaml's comments:\n%s", s.source)
	}
	if bytes.Contains(s.source, []byte("status:")) || bytes.Contains(s.source, []byte("creationTimestamp")) {
		t.Errorf("copy holds empty status or creationTimestamp:\n%s", s.source)
	}
	back, err := decodeSample(s.source)
	if err != nil {
		t.Fatalf("decoding the copy: %v", err)
	}
	// Semantic: a slice the copy leaves out decodes as nil where the Go object had it empty.
	if !equality.Semantic.DeepEqual(back.Policy, s.Policy) {
		t.Errorf("the copy's PlacementPolicy is\n%+v\nwant\n%+v", back.Policy, s.Policy)
	}
	if !equality.Semantic.DeepEqual(back.Service.ObjectMeta, s.Service.ObjectMeta) || !equality.Semantic.DeepEqual(back.Service.Spec, s.Service.Spec) {
		t.Errorf("the copy's RayService is\n%+v\nwant\n%+v", back.Service, s.Service)
	}
}

func TestLeadingComments(t *testing.T) {
	tests := map[string]string{
		"":                       "",
		"a: 1\n":                 "",
		"# x\n# y\na: 1\n":       "# x\n# y\n",
		"# only\n":               "# only\n",
		"# no newline":           "# no newline",
		"# x\n\n# after blank\n": "# x\n",
	}
	for in, want := range tests {
		if got := string(leadingComments([]byte(in))); got != want {
			t.Errorf("leadingComments(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRaySamples(t *testing.T) {
	c := fakeClone(t)
	c.Ray = true
	l := Layout{Dir: c.StateDir}
	if _, err := c.samples(l); err == nil || !strings.Contains(err.Error(), "run `make ray-image`") {
		t.Errorf("samples without the Ray image: error %v, want one saying to run make ray-image", err)
	}
	writeImageArchive(t, c.rayImage(), "rayfleet.local/ray:2.52.0")
	samples, err := c.samples(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 1 || samples[0].Service.Name != "hello" || samples[0].path != l.RaySampleFile() {
		t.Fatalf("samples = %+v, want the Ray sample alone, copied to %s", samples, l.RaySampleFile())
	}
	if img := samples[0].Service.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image; img != "rayfleet.local/ray:2.52.0" {
		t.Errorf("head image = %q, want the archive's", img)
	}
}

func TestFleetOptionsRay(t *testing.T) {
	c, err := Resolve(Config{Ray: true, StateDir: "/state", CLI: "/clone/bin/rayfleet", BasePort: 20000,
		Root: "/clone", K8sBin: "/clone/bin/k8s", Bin: "/clone/bin"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Traffic || !c.RealNodes {
		t.Fatalf("Resolve with Ray: Traffic %v, RealNodes %v; want both implied", c.Traffic, c.RealNodes)
	}
	opts := c.fleetOptions(Layout{Dir: "/state"}, nil)
	if opts.Traffic == nil || !opts.Traffic.Isolated || opts.Traffic.GatewayPort != 20003 {
		t.Errorf("Traffic = %+v, want isolated (the gateway answering on the host) on port 20003", opts.Traffic)
	}
	wantImages := []string{"/clone/bin/images/pause.tar", "/clone/bin/images/ray.tar"}
	if opts.RealNodes == nil || !opts.RealNodes.Ray || !reflect.DeepEqual(opts.RealNodes.Images, wantImages) {
		t.Errorf("RealNodes = %+v, want Ray with images %v", opts.RealNodes, wantImages)
	}
	for _, m := range opts.Members {
		if len(m.Nodes) != 0 {
			t.Errorf("member %s has kwok Nodes %v; with Ray its Pods must land on the real Node", m.Name, m.Nodes)
		}
	}
	if st := c.initialState(Layout{Dir: "/state"}); st.Traffic == nil || !st.Traffic.Ray {
		t.Errorf("state's traffic = %+v, want Ray set", st.Traffic)
	}
}

func TestPrintTrafficRay(t *testing.T) {
	st := &State{
		Clusters: []ClusterInfo{{Name: HubName, Kubeconfig: "/state/kubeconfigs/hub.kubeconfig"}},
		Traffic:  &TrafficInfo{GatewayURL: "http://127.0.0.1:16446", ServeIPs: serveIPs(), Ray: true},
	}
	var out bytes.Buffer
	printTraffic(&out, st, "kubectl")
	for _, want := range []string{
		"Ask Ray Serve through it: curl http://127.0.0.1:16446/\n",
		"kubectl --kubeconfig /state/kubeconfigs/hub.kubeconfig -n demo patch rayservice hello --type merge -p '" + rayBlueGreenPatch + "'\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q does not contain %q", out.String(), want)
		}
	}
	if strings.Contains(out.String(), "answer only where") {
		t.Errorf("output %q says the load balancers do not answer here; with Ray the gateway does", out.String())
	}
}

// writeImageArchive writes an image tarball whose manifest names image, as far as
// localcluster.ArchiveImageName reads it.
func writeImageArchive(t *testing.T, path, image string) {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	manifest := []byte(`[{"RepoTags":["` + image + `"]}]`)
	tw := tar.NewWriter(f)
	if err := tw.WriteHeader(&tar.Header{Name: "manifest.json", Mode: 0o644, Size: int64(len(manifest))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(manifest); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(tw.Close(), f.Close()); err != nil {
		t.Fatal(err)
	}
}
