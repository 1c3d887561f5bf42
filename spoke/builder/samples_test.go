package builder

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// samplesDir is KubeRay's config/samples: $KUBERAY/config/samples when KUBERAY is set, else the
// directory of the KubeRay module this build uses. Tests that need it are skipped without it.
func samplesDir(t testing.TB) string {
	t.Helper()
	root := os.Getenv("KUBERAY")
	if root == "" {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ray-project/kuberay/ray-operator").Output()
		if err != nil {
			t.Skipf("cannot locate the KubeRay module: %v", err)
		}
		root = strings.TrimSpace(string(out))
	}
	dir := filepath.Join(root, "config", "samples")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("KubeRay samples not available: %v", err)
	}
	return dir
}

// sampleCluster is one RayCluster found in a sample file; RayService and RayJob samples
// contribute the cluster their controllers would create.
type sampleCluster struct {
	file string
	rc   *rayv1.RayCluster
}

// readSamples returns every RayCluster (standalone or embedded) in the YAML files under dir,
// defaulted the way the reconciler defaults them.
func readSamples(t testing.TB, dir string) []sampleCluster {
	t.Helper()
	var out []sampleCluster
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			if rc := clusterFromDoc(t, path, doc); rc != nil {
				out = append(out, sampleCluster{file: filepath.Base(path), rc: rc})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read samples: %v", err)
	}
	return out
}

func clusterFromDoc(t testing.TB, path string, doc []byte) *rayv1.RayCluster {
	var head struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil
	}
	var rc *rayv1.RayCluster
	switch head.Kind {
	case "RayCluster":
		rc = &rayv1.RayCluster{}
		if err := yaml.Unmarshal(doc, rc); err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
	case "RayService":
		var rs rayv1.RayService
		if err := yaml.Unmarshal(doc, &rs); err != nil {
			t.Errorf("%s: %v", path, err)
			return nil
		}
		rc = &rayv1.RayCluster{Spec: rs.Spec.RayClusterSpec}
		rc.Name = rs.Name + "-x7k2p"
		rc.Labels = map[string]string{labels.OriginatedFromCRD: "RayService", labels.OriginatedFromCRName: rs.Name}
	case "RayJob":
		var rj rayv1.RayJob
		if err := yaml.Unmarshal(doc, &rj); err != nil || rj.Spec.RayClusterSpec == nil {
			return nil
		}
		rc = &rayv1.RayCluster{Spec: *rj.Spec.RayClusterSpec}
		rc.Name = rj.Name + "-x7k2p"
		rc.Labels = map[string]string{labels.OriginatedFromCRD: "RayJob", labels.OriginatedFromCRName: rj.Name}
	default:
		return nil
	}
	if rc.Name == "" || strings.HasPrefix(rc.Name, "-") {
		rc.Name = "generated" + rc.Name
	}
	rc.Namespace, rc.UID = "default", "0b5a3c1e-uid"
	if rc.Spec.HeadGroupSpec.RayStartParams == nil {
		rc.Spec.HeadGroupSpec.RayStartParams = map[string]string{}
	}
	for i := range rc.Spec.WorkerGroupSpecs {
		if rc.Spec.WorkerGroupSpecs[i].RayStartParams == nil {
			rc.Spec.WorkerGroupSpecs[i].RayStartParams = map[string]string{}
		}
	}
	return rc
}

func loadSample(t testing.TB, name string) *rayv1.RayCluster {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(samplesDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	var rc rayv1.RayCluster
	if err := yaml.Unmarshal(data, &rc); err != nil {
		t.Fatal(err)
	}
	return &rc
}

func TestKubeRaySamplesBuild(t *testing.T) {
	samples := readSamples(t, samplesDir(t))
	standalone := 0
	for _, s := range samples {
		if creatorOf(s.rc) == creatorRayCluster {
			standalone++
		}
	}
	if standalone < 30 {
		t.Fatalf("found %d RayCluster samples, expected KubeRay's ~38", standalone)
	}
	for _, variant := range []struct {
		name string
		opts Options
	}{
		{"defaults", DefaultOptions()},
		{"all switches flipped", OptionsFromEnv(func(k string) string {
			return map[string]string{"ENABLE_PROBES_INJECTION": "false", "ENABLE_INIT_CONTAINER_INJECTION": "false",
				"ENABLE_LOGIN_SHELL": "true", "ENABLE_DETERMINISTIC_HEAD_POD_NAME": "true", "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE": "true"}[k]
		})},
	} {
		for _, s := range samples {
			t.Run(variant.name+"/"+s.file+"/"+s.rc.Name, func(t *testing.T) {
				buildAll(t, s.rc, variant.opts)
			})
		}
	}
}

// buildAll builds every object of rc and checks each Pod is self-consistent.
func buildAll(t *testing.T, rc *rayv1.RayCluster, opts Options) {
	head, err := HeadPod(rc, opts)
	if err != nil {
		t.Fatalf("HeadPod: %v", err)
	}
	checkPod(t, rc, head)
	for i := range rc.Spec.WorkerGroupSpecs {
		g := &rc.Spec.WorkerGroupSpecs[i]
		replica := Replica{}
		if g.NumOfHosts > 1 {
			replica = Replica{Name: ReplicaGroupName(g.GroupName), Index: 1, HostIndex: 1}
		}
		pod, werr := WorkerPod(rc, g, replica, opts)
		if werr != nil {
			t.Fatalf("WorkerPod %s: %v", g.GroupName, werr)
		}
		checkPod(t, rc, pod)
	}
	svc, err := HeadService(rc, opts)
	if err != nil || len(svc.Spec.Ports) == 0 {
		t.Errorf("HeadService: %v, %d ports", err, len(svc.Spec.Ports))
	}
	hasServePort := false
	for _, p := range headPorts(rc) {
		hasServePort = hasServePort || isServePort(p.name)
	}
	if _, err := ServeService(rc); (err == nil) != hasServePort {
		t.Errorf("ServeService error = %v with serve port = %v", err, hasServePort)
	}
	if HeadlessService(rc) == nil {
		t.Errorf("HeadlessService returned nil")
	}
	if _, err := HeadIngress(rc); err != nil {
		t.Errorf("HeadIngress: %v", err)
	}
	if AutoscalerServiceAccount(rc).Name == "" || AutoscalerRole(rc).Name == "" || AutoscalerRoleBinding(rc).RoleRef.Name == "" {
		t.Errorf("autoscaler RBAC without names")
	}
	if rayspec.GCSFaultTolerance(&rc.Spec, rc.Annotations) {
		job, err := RedisCleanupJob(rc, opts)
		if err != nil {
			t.Fatalf("RedisCleanupJob: %v", err)
		}
		checkPodSpec(t, "redis cleanup", &job.Spec.Template.Spec)
	}
}

func checkPod(t *testing.T, rc *rayv1.RayCluster, pod *corev1.Pod) {
	t.Helper()
	where := pod.Name + pod.GenerateName
	if pod.Labels[labels.Cluster] != rc.Name || pod.Namespace != rc.Namespace || len(pod.OwnerReferences) != 1 {
		t.Errorf("%s: not tied to its cluster: labels %v, owners %v", where, pod.Labels, pod.OwnerReferences)
	}
	ray := &pod.Spec.Containers[0]
	startCmd := envValue(ray, envGeneratedStartCmd)
	if !strings.HasPrefix(startCmd, "ray start") || !strings.Contains(startCmd, "--block") {
		t.Errorf("%s: generated command %q", where, startCmd)
	}
	if !strings.EqualFold(pod.Annotations[labels.OverwriteContainerCmd], "true") &&
		!strings.Contains(strings.Join(ray.Args, " ")+strings.Join(ray.Command, " "), "ray start") {
		t.Errorf("%s: the Ray container does not run ray start: %q %q", where, ray.Command, ray.Args)
	}
	checkPodSpec(t, where, &pod.Spec)
}

// checkPodSpec catches what the API server would reject or the kubelet fail on: duplicate
// container or volume names, and mounts of volumes the Pod lacks.
func checkPodSpec(t *testing.T, where string, spec *corev1.PodSpec) {
	t.Helper()
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		if volumes[v.Name] {
			t.Errorf("%s: duplicate volume %q", where, v.Name)
		}
		volumes[v.Name] = true
	}
	names := map[string]bool{}
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		if names[c.Name] {
			t.Errorf("%s: duplicate container %q", where, c.Name)
		}
		names[c.Name] = true
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				t.Errorf("%s: container %q mounts missing volume %q", where, c.Name, m.Name)
			}
		}
	}
}
