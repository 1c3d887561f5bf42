package hubpolicy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/hubpolicy"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// waitTimeout bounds waits on the API server; generous for a busy 2-core machine.
const waitTimeout = 60 * time.Second

// The API server under test: the hub's identity with the default guard, a second hub identity
// ("loose") with a loosened guard, a third ("strict") at restricted, and the admin.
type guardEnv struct {
	admin, hub, loose, strict client.Client
	// config is the admin's.
	config *rest.Config
}

// enforce is Pod Security admission's enforce label.
const enforce = "pod-security.kubernetes.io/enforce"

// startGuard starts an API server with three guards: the default one for the hub's default
// identity, a loosened one and a restricted one for other ServiceAccounts, each with the hub's
// RBAC. Namespaces team-a and team-b enforce baseline, team-r restricted, pinned restricted
// at v1.30, bare nothing; team-a is labelled as the hub's, the others as allowed, except
// foreign and listed (baseline), which the hub did not create (listed is the loosened guard's
// allowed existing namespace).
func startGuard(t *testing.T) guardEnv {
	t.Helper()
	env := envtest.Start(t)
	ctx := t.Context()
	loose := hubpolicy.Default()
	loose.HubUsernames = []string{hubpolicy.HubUsername(hubaccess.DefaultNamespace, "loose-hub")}
	loose.AllowedNamespaces = []string{"team-a", "team-c", "bare", "listed"}
	loose.AllowedExistingNamespaces = []string{"listed"}
	loose.AllowedServiceAccounts = []string{"default", "ray"}
	loose.AllowedCapabilities = append(hubpolicy.BaselineCapabilities(), "SYS_PTRACE")
	loose.AllowHostNetwork, loose.AllowNodePorts = true, true
	loose.UnenforcedNamespaces = []string{"bare"}
	loose.AllowIngress = true
	loose.AllowedGatewayClasses = []string{"istio"}
	strict := hubpolicy.Default()
	strict.HubUsernames = []string{hubpolicy.HubUsername(hubaccess.DefaultNamespace, "strict-hub")}
	strict.MinPodSecurityLevel = hubpolicy.LevelRestricted
	for name, cfg := range map[string]hubpolicy.Config{hubpolicy.DefaultName: hubpolicy.Default(), "loose-guard": loose, "strict-guard": strict} {
		objs, err := hubpolicy.Build(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs.List() {
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
			}
		}
	}
	mustCreate(ctx, t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.DefaultNamespace}})
	mustCreate(ctx, t, env.Client, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.ClusterRoleName}, Rules: hubaccess.HubRules()})
	var clients []client.Client
	for _, sa := range []string{hubaccess.ServiceAccountName, "loose-hub", "strict-hub"} {
		mustCreate(ctx, t, env.Client, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: hubaccess.DefaultNamespace}})
		mustCreate(ctx, t, env.Client, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hubaccess.ClusterRoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: hubaccess.DefaultNamespace}},
		})
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{
			UserName: hubpolicy.HubUsername(hubaccess.DefaultNamespace, sa),
			Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + hubaccess.DefaultNamespace, "system:authenticated"},
		}
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	const version = "pod-security.kubernetes.io/enforce-version"
	const allowed, created = labels.HubNamespaceAllowed, labels.HubNamespaceCreated
	for ns, lbls := range map[string]map[string]string{
		"team-a": {enforce: hubpolicy.LevelBaseline, labels.HubNamespace: created}, "team-b": {enforce: hubpolicy.LevelBaseline, labels.HubNamespace: allowed},
		"team-r": {enforce: hubpolicy.LevelRestricted, version: "latest", labels.HubNamespace: allowed},
		"pinned": {enforce: hubpolicy.LevelRestricted, version: "v1.30", labels.HubNamespace: allowed},
		"bare":   {labels.HubNamespace: allowed}, "foreign": {enforce: hubpolicy.LevelBaseline}, "listed": {enforce: hubpolicy.LevelBaseline},
	} {
		mustCreate(ctx, t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: lbls}})
	}
	g := guardEnv{admin: env.Client, hub: clients[0], loose: clients[1], strict: clients[2], config: env.Config}
	// The API server loads policies asynchronously: wait until every guard refuses.
	for _, c := range []client.Client{g.hub, g.loose, g.strict} {
		gomega.NewWithT(t).Eventually(func() bool {
			rs := raybuilder.MakeRayService("probe", "team-b").Obj()
			rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.HostPID = true
			_, _, ok := hubpolicy.ParseDenial(c.Create(ctx, rs, client.DryRunAll))
			return ok
		}).WithTimeout(waitTimeout).WithPolling(100*time.Millisecond).Should(gomega.BeTrue(), "the guards never refused")
	}
	return g
}

func mustCreate(ctx context.Context, t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// rayService is a plain RayService in namespace team-b changed by edit.
func rayService(name string, edit func(*rayv1.RayService)) *rayv1.RayService {
	rs := raybuilder.MakeRayService(name, "team-b").Obj()
	rs.UID, rs.Generation = "", 0
	if edit != nil {
		edit(rs)
	}
	return rs
}

func head(rs *rayv1.RayService) *corev1.PodSpec {
	return &rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec
}

// incrementalUpgrade makes rs upgrade incrementally through a Gateway of class gatewayClass.
func incrementalUpgrade(rs *rayv1.RayService, gatewayClass string) {
	rs.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{
		Type: ptr.To(rayv1.RayServiceNewClusterWithIncrementalUpgrade),
		ClusterUpgradeOptions: &rayv1.ClusterUpgradeOptions{
			StepSizePercent: ptr.To[int32](10), IntervalSeconds: ptr.To[int32](30), GatewayClassName: gatewayClass,
		},
	}
}

func worker(rs *rayv1.RayService) *corev1.PodSpec {
	return &rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec
}

// TestGuard runs the guard on a real API server: what it refuses the hub, with which rule and
// message, what it lets through, and that the member's admin is not subject to it.
func TestGuard(t *testing.T) {
	g := startGuard(t)
	t.Run("rayservices", func(t *testing.T) { testRayServices(t, g) })
	t.Run("update", func(t *testing.T) { testUpdate(t, g) })
	t.Run("namespaces", func(t *testing.T) { testNamespaces(t, g) })
	t.Run("worker groups", func(t *testing.T) { testWorkerGroups(t, g) })
	t.Run("pod security", func(t *testing.T) { testPodSecurity(t, g) })
	t.Run("namespace level", func(t *testing.T) { testNamespaceLevel(t, g) })
	t.Run("type checking", func(t *testing.T) { testTypeChecking(t, g) })
}

func testRayServices(t *testing.T, g guardEnv) {
	ctx := t.Context()
	tests := []struct {
		name string
		edit func(*rayv1.RayService)
		// byLoose writes as the loosened guard's hub instead of the default one.
		byLoose  bool
		wantRule string // "" means allowed
		wantMsg  string // the whole guard message
	}{
		{name: "plain"},
		{name: "no worker groups", edit: func(rs *rayv1.RayService) { rs.Spec.RayClusterSpec.WorkerGroupSpecs = nil }},
		{name: "privileged head", wantRule: hubpolicy.RulePrivileged,
			wantMsg: `hubPolicy/privileged: container "ray-head" in headGroupSpec asks for privileged`,
			edit: func(rs *rayv1.RayService) {
				head(rs).Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			}},
		{name: "privileged worker init container and head", wantRule: hubpolicy.RulePrivileged,
			wantMsg: `hubPolicy/privileged: container "ray-head" in headGroupSpec asks for privileged (and 1 more)`,
			edit: func(rs *rayv1.RayService) {
				head(rs).Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
				worker(rs).InitContainers = []corev1.Container{{Name: "setup", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}
			}},
		{name: "privileged false", edit: func(rs *rayv1.RayService) {
			head(rs).Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(true)}
		}},
		{name: "privileged autoscaler", wantRule: hubpolicy.RulePrivileged,
			wantMsg: `hubPolicy/privileged: the autoscaler (rayClusterConfig.autoscalerOptions) asks for privileged`,
			edit: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
				rs.Spec.RayClusterSpec.AutoscalerOptions = &rayv1.AutoscalerOptions{SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}
			}},
		{name: "hostNetwork", wantRule: hubpolicy.RuleHostNamespaces,
			wantMsg: `hubPolicy/hostNamespaces: worker group "small" asks for hostNetwork`,
			edit:    func(rs *rayv1.RayService) { worker(rs).HostNetwork = true }},
		{name: "hostNetwork allowed", byLoose: true, edit: func(rs *rayv1.RayService) {
			rs.Namespace = "team-a"
			worker(rs).HostNetwork = true
			worker(rs).Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
		}},
		{name: "hostPID", wantRule: hubpolicy.RuleHostNamespaces,
			wantMsg: `hubPolicy/hostNamespaces: headGroupSpec asks for hostPID`,
			edit:    func(rs *rayv1.RayService) { head(rs).HostPID = true }},
		{name: "hostIPC even when host networking is allowed", byLoose: true, wantRule: hubpolicy.RuleHostNamespaces,
			wantMsg: `hubPolicy/hostNamespaces: headGroupSpec asks for hostIPC`,
			edit:    func(rs *rayv1.RayService) { rs.Namespace = "team-a"; head(rs).HostIPC = true }},
		{name: "hostPort", wantRule: hubpolicy.RuleHostPorts,
			wantMsg: `hubPolicy/hostPorts: container "ray-worker" in worker group "small" asks for hostPort 8080, 8081`,
			edit: func(rs *rayv1.RayService) {
				worker(rs).Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}, {ContainerPort: 81, HostPort: 8081}, {ContainerPort: 82}}
			}},
		{name: "hostPath", wantRule: hubpolicy.RuleHostPath,
			wantMsg: `hubPolicy/hostPath: volume "docker" in headGroupSpec is a hostPath (/var/run/docker.sock)`,
			edit: func(rs *rayv1.RayService) {
				head(rs).Volumes = []corev1.Volume{
					{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "docker", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run/docker.sock"}}},
				}
			}},
		{name: "capabilities", wantRule: hubpolicy.RuleCapabilities,
			wantMsg: `hubPolicy/capabilities: container "ray-head" in headGroupSpec adds capabilities SYS_ADMIN, NET_ADMIN`,
			edit: func(rs *rayv1.RayService) {
				head(rs).Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{
					Add: []corev1.Capability{"CHOWN", "SYS_ADMIN", "NET_ADMIN"}, Drop: []corev1.Capability{"ALL"},
				}}
			}},
		{name: "baseline capabilities", edit: func(rs *rayv1.RayService) {
			head(rs).Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE", "KILL"}}}
		}},
		{name: "capability allowed by config", byLoose: true, edit: func(rs *rayv1.RayService) {
			rs.Namespace = "team-a"
			head(rs).Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_PTRACE"}}}
		}},
		{name: "autoscaler capabilities", wantRule: hubpolicy.RuleCapabilities,
			wantMsg: `hubPolicy/capabilities: the autoscaler (rayClusterConfig.autoscalerOptions) adds capabilities SYS_ADMIN`,
			edit: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.AutoscalerOptions = &rayv1.AutoscalerOptions{SecurityContext: &corev1.SecurityContext{
					Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}},
				}}
			}},
		{name: "serviceAccountName", wantRule: hubpolicy.RuleServiceAccount,
			wantMsg: `hubPolicy/serviceAccount: worker group "small" runs as ServiceAccount "cluster-admin-sa"`,
			edit:    func(rs *rayv1.RayService) { worker(rs).ServiceAccountName = "cluster-admin-sa" }},
		{name: "deprecated serviceAccount", wantRule: hubpolicy.RuleServiceAccount,
			wantMsg: `hubPolicy/serviceAccount: headGroupSpec runs as ServiceAccount "admin"`,
			edit:    func(rs *rayv1.RayService) { head(rs).DeprecatedServiceAccount = "admin" }},
		{name: "default serviceAccountName", edit: func(rs *rayv1.RayService) { head(rs).ServiceAccountName = "default" }},
		{name: "serviceAccountName allowed by config", byLoose: true, edit: func(rs *rayv1.RayService) {
			rs.Namespace = "team-a"
			head(rs).ServiceAccountName = "ray"
		}},
		{name: "namespace outside the allowed ones", byLoose: true, wantRule: hubpolicy.RuleNamespace,
			wantMsg: `hubPolicy/namespace: RayService "namespace-outside-the-allowed-ones" in namespace "team-b", where the hub may not write`},
		{name: "namespace the hub did not create", wantRule: hubpolicy.RuleNamespaceOwner,
			wantMsg: `hubPolicy/namespaceOwner: RayService "namespace-the-hub-did-not-create" in namespace "foreign", which the hub did not create and this member has not allowed it into ` +
				`(the member's admin labels the namespace fleet.rayfleet.io/hub-namespace=allowed, or lists it in hubPolicy.allowedExistingNamespaces)`,
			edit: func(rs *rayv1.RayService) { rs.Namespace = "foreign" }},
		{name: "namespace the hub created", edit: func(rs *rayv1.RayService) { rs.Namespace = "team-a" }},
		{name: "existing namespace allowed by config", byLoose: true, edit: func(rs *rayv1.RayService) { rs.Namespace = "listed" }},
		{name: "serveService externalIPs", wantRule: hubpolicy.RuleExternalIPs,
			wantMsg: `hubPolicy/externalIPs: spec.serveService asks for externalIPs 203.0.113.7`,
			edit: func(rs *rayv1.RayService) {
				rs.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{ExternalIPs: []string{"203.0.113.7"}}}
			}},
		{name: "headService externalIPs even when node ports are allowed", byLoose: true, wantRule: hubpolicy.RuleExternalIPs,
			wantMsg: `hubPolicy/externalIPs: headGroupSpec.headService asks for externalIPs 203.0.113.7, 203.0.113.8`,
			edit: func(rs *rayv1.RayService) {
				rs.Namespace = "team-a"
				rs.Spec.RayClusterSpec.HeadGroupSpec.HeadService = &corev1.Service{Spec: corev1.ServiceSpec{ExternalIPs: []string{"203.0.113.7", "203.0.113.8"}}}
			}},
		{name: "LoadBalancer serveService", wantRule: hubpolicy.RuleNodePorts,
			wantMsg: `hubPolicy/nodePorts: spec.serveService is of type LoadBalancer`,
			edit: func(rs *rayv1.RayService) {
				rs.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
			}},
		{name: "headService nodePort", wantRule: hubpolicy.RuleNodePorts,
			wantMsg: `hubPolicy/nodePorts: headGroupSpec.headService asks for nodePort 30080`,
			edit: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.HeadGroupSpec.HeadService = &corev1.Service{Spec: corev1.ServiceSpec{
					Ports: []corev1.ServicePort{{Name: "dashboard", Port: 8265}, {Name: "serve", Port: 8000, NodePort: 30080}},
				}}
			}},
		{name: "NodePort head serviceType", wantRule: hubpolicy.RuleNodePorts,
			wantMsg: `hubPolicy/nodePorts: headGroupSpec.serviceType is NodePort`,
			edit: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort
			}},
		{name: "ClusterIP services", edit: func(rs *rayv1.RayService) {
			rs.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}
			rs.Spec.RayClusterSpec.HeadGroupSpec.ServiceType = corev1.ServiceTypeClusterIP
		}},
		{name: "node ports allowed by config", byLoose: true, edit: func(rs *rayv1.RayService) {
			rs.Namespace = "team-a"
			rs.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
			rs.Spec.RayClusterSpec.HeadGroupSpec.ServiceType = corev1.ServiceTypeNodePort
		}},
		{name: "enableIngress", wantRule: hubpolicy.RuleIngress,
			wantMsg: `hubPolicy/ingress: RayService "enableingress" sets headGroupSpec.enableIngress, which this member does not allow (hubPolicy.allowIngress)`,
			edit:    func(rs *rayv1.RayService) { rs.Spec.RayClusterSpec.HeadGroupSpec.EnableIngress = ptr.To(true) }},
		{name: "enableIngress false", edit: func(rs *rayv1.RayService) { rs.Spec.RayClusterSpec.HeadGroupSpec.EnableIngress = ptr.To(false) }},
		{name: "enableIngress allowed by config", byLoose: true, edit: func(rs *rayv1.RayService) {
			rs.Namespace = "team-a"
			rs.Spec.RayClusterSpec.HeadGroupSpec.EnableIngress = ptr.To(true)
		}},
		{name: "gatewayClassName", wantRule: hubpolicy.RuleGatewayClass,
			wantMsg: `hubPolicy/gatewayClass: RayService "gatewayclassname" sets spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName "istio", a GatewayClass this member does not allow (hubPolicy.allowedGatewayClasses)`,
			edit:    func(rs *rayv1.RayService) { incrementalUpgrade(rs, "istio") }},
		{name: "gatewayClassName outside the allowed ones", byLoose: true, wantRule: hubpolicy.RuleGatewayClass,
			wantMsg: `hubPolicy/gatewayClass: RayService "gatewayclassname-outside-the-allowed-ones" sets spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName "nginx", a GatewayClass this member does not allow (hubPolicy.allowedGatewayClasses)`,
			edit: func(rs *rayv1.RayService) {
				rs.Namespace = "team-a"
				incrementalUpgrade(rs, "nginx")
			}},
		// Whatever the upgrade type: the options alone name the Gateway's class.
		{name: "gatewayClassName with another upgrade type", wantRule: hubpolicy.RuleGatewayClass,
			wantMsg: `hubPolicy/gatewayClass: RayService "gatewayclassname-with-another-upgrade-type" sets spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName "istio", a GatewayClass this member does not allow (hubPolicy.allowedGatewayClasses)`,
			edit: func(rs *rayv1.RayService) {
				incrementalUpgrade(rs, "istio")
				rs.Spec.UpgradeStrategy.Type = ptr.To(rayv1.RayServiceNewCluster)
			}},
		{name: "gatewayClassName allowed by config", byLoose: true, edit: func(rs *rayv1.RayService) {
			rs.Namespace = "team-a"
			incrementalUpgrade(rs, "istio")
		}},
		// KubeRay refuses an incremental upgrade without a class and creates no Gateway.
		{name: "empty gatewayClassName", edit: func(rs *rayv1.RayService) { incrementalUpgrade(rs, "") }},
		{name: "NewCluster upgrade", edit: func(rs *rayv1.RayService) {
			rs.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.RayServiceNewCluster)}
		}},
		{name: "first rule wins", wantRule: hubpolicy.RuleServiceAccount,
			wantMsg: `hubPolicy/serviceAccount: headGroupSpec runs as ServiceAccount "admin"`,
			edit: func(rs *rayv1.RayService) {
				head(rs).HostPID = true
				head(rs).ServiceAccountName = "admin"
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := rayService(strings.ReplaceAll(strings.ToLower(tt.name), " ", "-"), tt.edit)
			c := g.hub
			if tt.byLoose {
				c = g.loose
			}
			checkWrite(t, c.Create(ctx, rs), tt.wantRule, tt.wantMsg)
			if tt.wantRule == "" {
				return
			}
			// The guard is only for the hub: the member's admin writes the same RayService.
			admin := rayService(rs.Name, tt.edit)
			if err := g.admin.Create(ctx, admin); err != nil {
				t.Errorf("the admin's create: %v, want it allowed", err)
			}
		})
	}
}

// checkWrite checks err, the answer to a write, against the rule and message the guard should
// have refused it with ("" when it should be allowed).
func checkWrite(t *testing.T, err error, wantRule, wantMsg string) {
	t.Helper()
	rule, msg, ok := hubpolicy.ParseDenial(err)
	switch {
	case wantRule == "" && err != nil:
		t.Fatalf("write refused: %v, want it allowed", err)
	case wantRule == "":
	case !ok:
		t.Fatalf("write answered %v, want a refusal by rule %s", err, wantRule)
	case rule != wantRule || msg != wantMsg:
		t.Errorf("refused by rule %q with %q, want rule %q with %q (the API server said %v)", rule, msg, wantRule, wantMsg, err)
	}
}

// testUpdate checks an update like a create: a RayService the hub created plainly cannot be
// turned privileged later.
func testUpdate(t *testing.T, g guardEnv) {
	ctx := t.Context()
	rs := rayService("updated", nil)
	if err := g.hub.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}
	head(rs).Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	checkWrite(t, g.hub.Update(ctx, rs), hubpolicy.RulePrivileged, `hubPolicy/privileged: container "ray-head" in headGroupSpec asks for privileged`)
	// A server-side apply is the hub's own way of writing.
	rs.ManagedFields, rs.ResourceVersion = nil, ""
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rs)
	if err != nil {
		t.Fatal(err)
	}
	delete(content, "status")
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(rayv1.GroupVersion.WithKind("RayService"))
	checkWrite(t, g.hub.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("rayfleet-hub"), client.ForceOwnership),
		hubpolicy.RulePrivileged, `hubPolicy/privileged: container "ray-head" in headGroupSpec asks for privileged`)
}

// testNamespaces checks the Namespaces the hub creates.
func testNamespaces(t *testing.T, g guardEnv) {
	ctx := t.Context()
	const version = "pod-security.kubernetes.io/enforce-version"
	tests := []struct {
		name     string
		labels   map[string]string
		byLoose  bool
		byStrict bool
		wantRule string
		wantMsg  string
	}{
		{name: "plain"},
		{name: "baseline", labels: map[string]string{enforce: "baseline", "pod-security.kubernetes.io/warn": "privileged"}},
		{name: "restricted latest", labels: map[string]string{enforce: "restricted", version: "latest"}},
		{name: "privileged", labels: map[string]string{enforce: "privileged"}, wantRule: hubpolicy.RulePodSecurityLabels,
			wantMsg: `hubPolicy/podSecurityLabels: namespace "privileged" sets pod-security.kubernetes.io/enforce=privileged, looser than baseline`},
		{name: "pinned version", labels: map[string]string{enforce: "baseline", version: "v1.22"}, wantRule: hubpolicy.RulePodSecurityLabels,
			wantMsg: `hubPolicy/podSecurityLabels: namespace "pinned-version" pins pod-security.kubernetes.io/enforce-version=v1.22 (only latest)`},
		// The loosened guard allows namespaces team-a and team-c; the strict one restricted ones only.
		{name: "team-c", byLoose: true, labels: map[string]string{enforce: "baseline"}},
		{name: "team-c", byStrict: true, labels: map[string]string{enforce: "restricted"}},
		{name: "team-c", byStrict: true, labels: map[string]string{enforce: "baseline"}, wantRule: hubpolicy.RulePodSecurityLabels,
			wantMsg: `hubPolicy/podSecurityLabels: namespace "team-c" sets pod-security.kubernetes.io/enforce=baseline, looser than restricted`},
		// The hub marks a namespace as its own only when it creates it.
		{name: "created", labels: map[string]string{enforce: "baseline", labels.HubNamespace: labels.HubNamespaceCreated}},
		{name: "allowed", labels: map[string]string{enforce: "baseline", labels.HubNamespace: labels.HubNamespaceAllowed}, wantRule: hubpolicy.RuleNamespaceOwner,
			wantMsg: `hubPolicy/namespaceOwner: namespace "allowed" sets fleet.rayfleet.io/hub-namespace=allowed, where the hub may set only created, on creating it`},
		{name: "team-d", byLoose: true, wantRule: hubpolicy.RuleNamespace,
			wantMsg: `hubPolicy/namespace: namespace "team-d", where the hub may not write`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: strings.ReplaceAll(tt.name, " ", "-"), Labels: tt.labels}}
			c := g.hub
			if tt.byLoose {
				c = g.loose
			}
			if tt.byStrict {
				c = g.strict
			}
			// A dry run asks the guard the same question and leaves the name free.
			checkWrite(t, c.Create(ctx, ns, client.DryRunAll), tt.wantRule, tt.wantMsg)
			if tt.wantRule != "" {
				if err := g.admin.Create(ctx, ns.DeepCopy(), client.DryRunAll); err != nil {
					t.Errorf("the admin's create: %v, want it allowed", err)
				}
			}
		})
	}
	// The hub holds no update on Namespaces, but the guard does not rely on RBAC: a loosened
	// one with update still cannot lower a Namespace's level.
	t.Run("update", func(t *testing.T) { testNamespaceUpdate(ctx, t, g) })
}

// testNamespaceUpdate grants the hub update on Namespaces and checks the guard refuses an
// update that lowers or removes the enforce level or changes any other label.
func testNamespaceUpdate(ctx context.Context, t *testing.T, g guardEnv) {
	mustCreate(ctx, t, g.admin, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "namespace-updater"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"update"}}},
	})
	mustCreate(ctx, t, g.admin, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "namespace-updater"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "namespace-updater"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: hubaccess.ServiceAccountName, Namespace: hubaccess.DefaultNamespace}},
	})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "strict", Labels: map[string]string{enforce: "restricted"}}}
	mustCreate(ctx, t, g.admin, ns)
	tests := []struct {
		labels   map[string]string
		wantRule string
		wantMsg  string
	}{
		{labels: map[string]string{enforce: "baseline"}, wantRule: hubpolicy.RulePodSecurityLabels,
			wantMsg: `hubPolicy/podSecurityLabels: namespace "strict" lowers pod-security.kubernetes.io/enforce from restricted to baseline`},
		{labels: map[string]string{"team": "a"}, wantRule: hubpolicy.RulePodSecurityLabels,
			wantMsg: `hubPolicy/podSecurityLabels: namespace "strict" removes pod-security.kubernetes.io/enforce=restricted (and 1 more)`},
		{labels: map[string]string{enforce: "restricted", "team": "a"}, wantRule: hubpolicy.RulePodSecurityLabels,
			wantMsg: `hubPolicy/podSecurityLabels: namespace "strict" changes labels team, where the hub may change only pod-security.kubernetes.io/ labels`},
		{labels: map[string]string{enforce: "restricted", labels.HubNamespace: labels.HubNamespaceCreated}, wantRule: hubpolicy.RuleNamespaceOwner,
			wantMsg: `hubPolicy/namespaceOwner: namespace "strict" changes fleet.rayfleet.io/hub-namespace from "" to "created", which only the member's admin may`},
		{labels: map[string]string{enforce: "restricted", "pod-security.kubernetes.io/enforce-version": "latest"}},
	}
	for _, tt := range tests {
		gomega.NewWithT(t).Eventually(func() error {
			var cur corev1.Namespace
			if err := g.hub.Get(ctx, client.ObjectKeyFromObject(ns), &cur); err != nil {
				return err
			}
			cur.Labels = tt.labels
			err := g.hub.Update(ctx, &cur, client.DryRunAll)
			if _, _, ok := hubpolicy.ParseDenial(err); !ok && err != nil {
				return err // RBAC not yet in effect
			}
			checkWrite(t, err, tt.wantRule, tt.wantMsg)
			return nil
		}).WithTimeout(waitTimeout).Should(gomega.Succeed())
	}
}

// testWorkerGroups checks the guard's cost on large RayServices: with Default's bound, 1,000
// worker groups are checked within the API server's CEL budget and allowed, and more are
// refused by RuleWorkerGroups up front (the admin, whom the guard does not look at, writes 1,001). 10,000 groups never reach
// admission: the API server refuses a request body over 3 MiB first, for the admin too.
func testWorkerGroups(t *testing.T, g guardEnv) {
	ctx := t.Context()
	tests := []struct {
		groups   int
		wantRule string
		wantMsg  string
	}{
		{groups: 100},
		{groups: 1000},
		{groups: 1001, wantRule: hubpolicy.RuleWorkerGroups,
			wantMsg: `hubPolicy/workerGroups: RayService "groups-1001" has 1001 worker groups, more than the 1000 the hub may write`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.groups), func(t *testing.T) {
			rs := manyGroups(fmt.Sprintf("groups-%d", tt.groups), tt.groups)
			// A dry run runs admission in full and stores nothing.
			checkWrite(t, g.hub.Create(ctx, rs, client.DryRunAll), tt.wantRule, tt.wantMsg)
			if tt.wantRule != "" {
				if err := g.admin.Create(ctx, manyGroups(rs.Name, tt.groups), client.DryRunAll); err != nil {
					t.Errorf("the admin's create: %v, want it allowed", err)
				}
			}
		})
	}
	// The largest RayService the guard admits, checked in full at either level within the
	// API server's CEL budget (a budget spent would refuse it, as the policies fail closed):
	// the largest request the API server takes (3 MiB) in a dry run, and one etcd stores
	// (its 1.5 MiB request limit) created for real.
	t.Run("largest", func(t *testing.T) {
		for _, c := range []struct {
			who       string
			namespace string
			c         client.Client
		}{{"strict", "team-r", g.strict}, {"hub", "team-b", g.hub}} {
			rs := largest("largest-"+c.who, hubpolicy.DefaultMaxWorkerGroups, 3, 2, 6)
			rs.Namespace = c.namespace
			start := time.Now()
			if err := c.c.Create(ctx, rs, client.DryRunAll); err != nil {
				t.Errorf("the %s's dry run of the largest RayService: %v, want it admitted", c.who, err)
			}
			t.Logf("the %s's dry run of the largest RayService took %v (the admin's: %v)", c.who, time.Since(start), timed(func() error {
				return g.admin.Create(ctx, largest("largest-"+c.who, hubpolicy.DefaultMaxWorkerGroups, 3, 2, 6), client.DryRunAll)
			}))
			stored := largest("stored-"+c.who, hubpolicy.DefaultMaxWorkerGroups, 1, 1, 2)
			stored.Namespace = c.namespace
			if err := c.c.Create(ctx, stored); err != nil {
				t.Errorf("the %s's create of the largest RayService etcd stores: %v, want it admitted", c.who, err)
			}
		}
	})
	t.Run("10000", func(t *testing.T) {
		for who, c := range map[string]client.Client{"hub": g.hub, "admin": g.admin} {
			err := c.Create(ctx, manyGroups("groups-10000", 10000), client.DryRunAll)
			if !apierrors.IsRequestEntityTooLargeError(err) {
				t.Errorf("the %s's create of 10,000 worker groups: %v, want the API server's request size limit", who, err)
			}
		}
	})
}

// timed is how long f took, or its error.
func timed(f func() error) any {
	start := time.Now()
	if err := f(); err != nil {
		return err
	}
	return time.Since(start)
}

// manyGroups is a plain RayService with n worker groups, each with a securityContext, a
// port and a volume for the rules to look at.
func manyGroups(name string, n int) *rayv1.RayService {
	return rayService(name, func(rs *rayv1.RayService) {
		w := worker(rs)
		w.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"CHOWN"}}}
		w.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
		w.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		first := rs.Spec.RayClusterSpec.WorkerGroupSpecs[0]
		rs.Spec.RayClusterSpec.WorkerGroupSpecs = make([]rayv1.WorkerGroupSpec, n)
		for i := range n {
			rs.Spec.RayClusterSpec.WorkerGroupSpecs[i] = *first.DeepCopy()
			rs.Spec.RayClusterSpec.WorkerGroupSpecs[i].GroupName = fmt.Sprintf("g%d", i)
		}
	})
}
