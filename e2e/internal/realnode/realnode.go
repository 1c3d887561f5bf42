// Package realnode starts, for an e2e test, local clusters that each have one real Node
// (kubelet, containerd, runc, a CNI bridge and kube-proxy in a network namespace of its own;
// see localcluster.RealNode) with the images `make image` and `make ray-image` write imported.
// Start returns once every Node is Ready and registers the cleanup: the control planes' logs
// dumped when the test failed, the clusters stopped, the namespaces deleted. Root only.
// HeadMemory reads a Ray head's memory; the RayCluster and Serve app such a Node runs are
// shared/localfleet/rayapp's.
//
// Only the e2e tests import it; of the repository it imports only shared/localfleet.
package realnode

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// logLines is how much of each component's log a failed test prints.
const logLines = 100

// Image is an image archive under $RAYFLEET_BIN/images and the image it holds.
type Image struct {
	// Archive is the tarball's path.
	Archive string
	// Name is the image's name, the first tag in the archive's manifest.
	Name string
}

// Pause is the Pod sandbox image every real Node runs (make image).
func Pause(t testing.TB) Image { return LoadImage(t, "pause.tar", "make image") }

// RayFleet is the image holding the hub, the spoke and the CLI (make image).
func RayFleet(t testing.TB) Image { return LoadImage(t, "rayfleet.tar", "make image") }

// Ray is the image real Ray Pods run (make ray-image).
func Ray(t testing.TB) Image { return LoadImage(t, "ray.tar", "make ray-image") }

// LoadImage names the image in file under $RAYFLEET_BIN/images and fails t, naming the make
// target that writes the archive, when it cannot.
func LoadImage(t testing.TB, file, target string) Image {
	t.Helper()
	archive := filepath.Join(localfleet.DefaultRayFleetBin(), "images", file)
	name, err := localcluster.ArchiveImageName(archive)
	if err != nil {
		t.Fatalf("%v (%s)", err, target)
	}
	return Image{Archive: archive, Name: name}
}

// Spec is one cluster to start.
type Spec struct {
	// Options are the cluster's; Start sets Scheduler, ControllerManager, KeepState (from
	// RAYFLEET_E2E_KEEP) and RealNode.
	Options localcluster.Options
	// Prefix is the Node's address and its network namespace's /24; each cluster needs its own.
	Prefix netip.Prefix
	// Images are imported into the Node besides the pause image.
	Images []Image
}

// Cluster is a started cluster and the network namespace its real Node runs in.
type Cluster struct {
	*localcluster.Cluster
	// NetNS is the Node's namespace, where Pod and Service addresses answer.
	NetNS *localcluster.NetNS
}

// SkipUnavailable skips t without root or the node tools (make node-tools). Start calls it;
// a test calls it first when its own set-up would fail on such a machine.
func SkipUnavailable(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a real Node needs root (network namespaces, cgroups, mounts)")
	}
	if missing := localcluster.MissingNodeTools(localcluster.DefaultBinDir()); len(missing) > 0 {
		t.Skipf("node tools %v missing from %s (make node-tools)", missing, localcluster.DefaultBinDir())
	}
}

// Start starts the clusters side by side and returns them in the order of specs, each with
// a Ready real Node (see SkipUnavailable).
func Start(t *testing.T, specs ...Spec) []*Cluster {
	t.Helper()
	SkipUnavailable(t)
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Fatalf("runc not on PATH (Debian's runc package): %v", err)
	}
	pause := Pause(t)
	opts := make([]localcluster.Options, len(specs))
	for i, s := range specs {
		ns := netNS(t, s.Options.Name, s.Prefix)
		images := []string{pause.Archive}
		for _, img := range s.Images {
			images = append(images, img.Archive)
		}
		o := s.Options
		o.Scheduler, o.ControllerManager = true, true
		o.KeepState = os.Getenv("RAYFLEET_E2E_KEEP") != ""
		o.RealNode = &localcluster.RealNode{NetNS: ns, Images: images, SandboxImage: pause.Name, Runc: runc}
		opts[i] = o
	}

	start := time.Now()
	started := make([]*localcluster.Cluster, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		wg.Go(func() { started[i], errs[i] = localcluster.Start(t.Context(), o) })
	}
	wg.Wait()
	t.Cleanup(func() {
		stop := time.Now()
		for _, c := range started {
			if c != nil {
				c.Stop()
			}
		}
		t.Logf("clusters and real Nodes stopped in %s", time.Since(stop).Round(time.Millisecond))
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("starting the clusters with real Nodes: %v", err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, c := range started {
			fmt.Fprintf(os.Stderr, "######## cluster %s ########\n", c.Name)
			c.DumpLogs(os.Stderr, logLines)
		}
	})
	t.Logf("%d cluster(s), each with a Ready real Node, up in %s", len(started), time.Since(start).Round(time.Millisecond))

	clusters := make([]*Cluster, len(started))
	for i, c := range started {
		clusters[i] = &Cluster{Cluster: c, NetNS: opts[i].RealNode.NetNS}
	}
	return clusters
}

// netNS creates the Node's namespace, named for the cluster and this process, deleted after
// the test.
func netNS(t *testing.T, cluster string, prefix netip.Prefix) *localcluster.NetNS {
	t.Helper()
	ns, err := localcluster.CreateNetNS(fmt.Sprintf("rf-%s-%d", cluster, os.Getpid()), prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Delete(); err != nil {
			t.Error(err)
		}
	})
	return ns
}
