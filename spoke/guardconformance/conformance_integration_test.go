package guardconformance

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/hubpolicy"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/spoke/builder"
)

// waitTimeout bounds waits on the API server; generous for a busy 2-core machine.
const waitTimeout = 60 * time.Second

func intOrPort(p int32) intstr.IntOrString { return intstr.FromInt32(p) }

// level is one Pod Security level under test: the guard for it, as its hub identity, and a
// namespace enforcing it.
type level struct {
	name      psaapi.Level
	hub       client.Client
	namespace string
	// base is the securityContext every container of the base RayService carries.
	base *corev1.SecurityContext
}

// restrictedContext passes every restricted check of a container.
func restrictedContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		RunAsNonRoot:             ptr.To(true),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// startLevels starts an API server with the guard at baseline (Default, for the hub's
// identity) and at restricted (for a second hub identity), and a namespace enforcing each.
func startLevels(t *testing.T) []level {
	t.Helper()
	env := envtest.Start(t)
	ctx := t.Context()
	mustCreate := func(obj client.Object) {
		t.Helper()
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	mustCreate(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.DefaultNamespace}})
	mustCreate(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.ClusterRoleName}, Rules: hubaccess.HubRules()})
	var levels []level
	for _, l := range []struct {
		level psaapi.Level
		sa    string
		base  *corev1.SecurityContext
	}{{psaapi.LevelBaseline, hubaccess.ServiceAccountName, nil}, {psaapi.LevelRestricted, "strict-hub", restrictedContext()}} {
		cfg := hubpolicy.Default()
		cfg.HubUsernames = []string{hubpolicy.HubUsername(hubaccess.DefaultNamespace, l.sa)}
		cfg.MinPodSecurityLevel = string(l.level)
		// Pod Security is what is compared here: the Gateway KubeRay's incremental upgrade
		// sample asks for is another rule's business.
		cfg.AllowedGatewayClasses = []string{"istio"}
		objs, err := hubpolicy.Build("guard-"+string(l.level), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs.List() {
			mustCreate(obj)
		}
		mustCreate(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: l.sa, Namespace: hubaccess.DefaultNamespace}})
		mustCreate(&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: l.sa},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hubaccess.ClusterRoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: l.sa, Namespace: hubaccess.DefaultNamespace}},
		})
		ns := "level-" + string(l.level)
		mustCreate(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			psaapi.EnforceLevelLabel: string(l.level), labels.HubNamespace: labels.HubNamespaceCreated}}})
		rc := rest.CopyConfig(env.Config)
		rc.Impersonate = rest.ImpersonationConfig{
			UserName: cfg.HubUsernames[0],
			Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + hubaccess.DefaultNamespace, "system:authenticated"},
		}
		c, err := client.New(rc, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		levels = append(levels, level{name: l.level, hub: c, namespace: ns, base: l.base})
	}
	// The API server loads policies asynchronously: wait until each guard refuses.
	for _, l := range levels {
		gomega.NewWithT(t).Eventually(func() bool {
			rs := baseService(l, "probe")
			rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.HostPID = true
			_, _, ok := hubpolicy.ParseDenial(l.hub.Create(ctx, rs, client.DryRunAll))
			return ok
		}).WithTimeout(waitTimeout).WithPolling(100*time.Millisecond).Should(gomega.BeTrue(), "the %s guard never refused", l.name)
	}
	return levels
}

// baseService is the plain RayService of the level: every container carries its base.
func baseService(l level, name string) *rayv1.RayService {
	rs := raybuilder.MakeRayService(name, l.namespace).Obj()
	rs.UID, rs.Generation = "", 0
	spec := &rs.Spec.RayClusterSpec
	for _, t := range []*corev1.PodTemplateSpec{&spec.HeadGroupSpec.Template, &spec.WorkerGroupSpecs[0].Template} {
		for i := range t.Spec.Containers {
			t.Spec.Containers[i].SecurityContext = l.base.DeepCopy()
		}
	}
	return rs
}

// verdict is one side's answer: allowed, or why not.
type verdict struct {
	allowed bool
	why     string
}

// upstream runs Pod Security admission's checks at l, version latest, on every Pod the spoke
// builds for rs: the head and one Pod of each worker group.
func upstream(t *testing.T, evaluator psapolicy.Evaluator, lvl psaapi.Level, rs *rayv1.RayService) verdict {
	t.Helper()
	opts := builder.DefaultOptions()
	rc, err := builder.RayClusterForRayService(rs, rs.Name+"-c", opts)
	if err != nil {
		t.Fatal(err)
	}
	pods := []*corev1.Pod{}
	head, err := builder.HeadPod(rc, opts)
	if err != nil {
		t.Fatal(err)
	}
	pods = append(pods, head)
	for i := range rc.Spec.WorkerGroupSpecs {
		w, err := builder.WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[i], builder.Replica{}, opts)
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, w)
	}
	var why []string
	for _, p := range pods {
		res := psapolicy.AggregateCheckResults(evaluator.EvaluatePod(psaapi.LevelVersion{Level: lvl, Version: psaapi.LatestVersion()}, &p.ObjectMeta, &p.Spec))
		if !res.Allowed {
			why = append(why, fmt.Sprintf("%s: %s", p.Labels["ray.io/node-type"], res.ForbiddenReason()))
		}
	}
	return verdict{allowed: len(why) == 0, why: strings.Join(why, "; ")}
}

// guard asks l's guard about rs with a dry-run create.
func guard(t *testing.T, l level, rs *rayv1.RayService) verdict {
	t.Helper()
	err := l.hub.Create(t.Context(), rs, client.DryRunAll)
	if err == nil {
		return verdict{allowed: true}
	}
	if _, msg, ok := hubpolicy.ParseDenial(err); ok {
		return verdict{why: msg}
	}
	t.Fatalf("the guard answered %v, neither an admission nor its refusal", err)
	return verdict{}
}

// TestGuardAgreesWithPodSecurity is the single source of truth: for every entry of the corpus
// and every KubeRay sample RayService, at baseline and at restricted, the guard refuses the
// RayService exactly when Pod Security admission would forbid a Pod the spoke builds from it
// (entries marked guardStricter must be refused, whatever Pod Security says). With -v it logs
// one row per RayService, the table of what was tried.
func TestGuardAgreesWithPodSecurity(t *testing.T) {
	evaluator, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	levels := startLevels(t)
	for _, l := range levels {
		t.Run(string(l.name), func(t *testing.T) {
			entries := append([]entry{{name: "plain"}}, corpus(l.base)...)
			entries = append(entries, samples(t)...)
			for i, e := range entries {
				rs := baseService(l, entryName(string(l.name), i))
				if e.edit != nil {
					e.edit(rs)
				}
				up, got := upstream(t, evaluator, l.name, rs), guard(t, l, rs)
				t.Logf("| %s | %s | %s | %s |", l.name, e.name, answer(up), answer(got))
				switch {
				case e.guardStricter != "" && got.allowed:
					t.Errorf("%s: guard %s, Pod Security %s; want the guard to refuse (%s)", e.name, answer(got), answer(up), e.guardStricter)
				case e.guardStricter == "" && up.allowed != got.allowed:
					t.Errorf("%s: guard %s, Pod Security %s", e.name, answer(got), answer(up))
				}
			}
		})
	}
}

// answer is a verdict in a table cell.
func answer(v verdict) string {
	if v.allowed {
		return "allowed"
	}
	return "refused: " + strings.ReplaceAll(v.why, "|", "/")
}

// samples are KubeRay's sample RayServices (config/samples/ray-service.*.yaml of the KubeRay
// module this build uses), each as a corpus entry replacing the base's cluster spec.
func samples(t *testing.T) []entry {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ray-project/kuberay/ray-operator").Output()
	if err != nil {
		t.Fatalf("locating the KubeRay module: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "config", "samples", "ray-service.*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("KubeRay's sample RayServices: %v (%d files)", err, len(files))
	}
	slices.Sort(files)
	var entries []entry
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range bytes.Split(data, []byte("\n---")) {
			var rs rayv1.RayService
			if err := yaml.Unmarshal(doc, &rs); err != nil || rs.Kind != "RayService" {
				continue
			}
			e := entry{name: "KubeRay sample " + filepath.Base(f), edit: func(dst *rayv1.RayService) {
				dst.Spec = *rs.Spec.DeepCopy()
			}}
			if svc := rs.Spec.ServeService; svc != nil && (svc.Spec.Type == corev1.ServiceTypeLoadBalancer || svc.Spec.Type == corev1.ServiceTypeNodePort) {
				e.guardStricter = "the guard refuses NodePort and LoadBalancer Services, which Pod Security does not look at"
			}
			entries = append(entries, e)
		}
	}
	return entries
}
