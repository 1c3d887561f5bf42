package hubpolicy_test

import (
	"fmt"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/hubpolicy"
)

// restrictedContext is a container securityContext that passes every restricted check.
func restrictedContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		RunAsNonRoot:             ptr.To(true),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// restrictedService is a plain RayService in team-r whose Pod templates pass restricted,
// changed by edit.
func restrictedService(name string, edit func(*rayv1.RayService)) *rayv1.RayService {
	return rayService(name, func(rs *rayv1.RayService) {
		rs.Namespace = "team-r"
		for _, spec := range []*corev1.PodSpec{head(rs), worker(rs)} {
			for i := range spec.Containers {
				spec.Containers[i].SecurityContext = restrictedContext()
			}
		}
		if edit != nil {
			edit(rs)
		}
	})
}

// testPodSecurity checks the messages of the Pod Security rules beyond the original ones, one
// location each; the conformance test in spoke/guardconformance covers every check and location
// against the upstream library.
func testPodSecurity(t *testing.T, g guardEnv) {
	ctx := t.Context()
	tests := []struct {
		name     string
		edit     func(*rayv1.RayService)
		strict   bool
		wantRule string
		wantMsg  string
	}{
		{name: "seccomp unconfined", wantRule: hubpolicy.RuleSeccomp,
			wantMsg: `hubPolicy/seccomp: headGroupSpec sets securityContext.seccompProfile.type Unconfined`,
			edit: func(rs *rayv1.RayService) {
				head(rs).SecurityContext = &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
			}},
		{name: "seLinux spc_t", wantRule: hubpolicy.RuleSELinux,
			wantMsg: `hubPolicy/seLinux: container "ray-head" in headGroupSpec sets securityContext.seLinuxOptions type "spc_t", user "", role ""`,
			edit: func(rs *rayv1.RayService) {
				head(rs).Containers[0].SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}
			}},
		{name: "appArmor unconfined", wantRule: hubpolicy.RuleAppArmor,
			wantMsg: `hubPolicy/appArmor: init container "setup" in worker group "small" sets securityContext.appArmorProfile.type Unconfined`,
			edit: func(rs *rayv1.RayService) {
				worker(rs).InitContainers = []corev1.Container{{Name: "setup", Image: "busybox", SecurityContext: &corev1.SecurityContext{
					AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined},
				}}}
			}},
		{name: "appArmor annotation", wantRule: hubpolicy.RuleAppArmor,
			wantMsg: `hubPolicy/appArmor: headGroupSpec has annotation container.apparmor.security.beta.kubernetes.io/ray-head=unconfined`,
			edit: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/ray-head": "unconfined"}
			}},
		{name: "unsafe sysctl", wantRule: hubpolicy.RuleSysctls,
			wantMsg: `hubPolicy/sysctls: worker group "small" sets sysctl kernel.msgmax`,
			edit: func(rs *rayv1.RayService) {
				worker(rs).SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}, {Name: "kernel.msgmax", Value: "1"}}}
			}},
		{name: "host probe", wantRule: hubpolicy.RuleHostProbes,
			wantMsg: `hubPolicy/hostProbes: container "ray-head" in headGroupSpec sets a host in readinessProbe, lifecycle.preStop`,
			edit: func(rs *rayv1.RayService) {
				c := &head(rs).Containers[0]
				c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "10.0.0.1"}}}
				c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: "metadata.internal"}}}
			}},
		{name: "autoscaler seccomp", wantRule: hubpolicy.RuleSeccomp,
			wantMsg: `hubPolicy/seccomp: the autoscaler (rayClusterConfig.autoscalerOptions) sets securityContext.seccompProfile.type Unconfined`,
			edit: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
				rs.Spec.RayClusterSpec.AutoscalerOptions = &rayv1.AutoscalerOptions{SecurityContext: &corev1.SecurityContext{
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
				}}
			}},
		{name: "restricted plain", strict: true},
		{name: "restricted root", strict: true, wantRule: hubpolicy.RuleRunAsNonRoot,
			wantMsg: `hubPolicy/runAsNonRoot: container "ray-worker" in worker group "small" sets no securityContext.runAsNonRoot, nor does its Pod`,
			edit:    func(rs *rayv1.RayService) { worker(rs).Containers[0].SecurityContext.RunAsNonRoot = nil }},
		// The spoke gives a sidecar without its own securityContext the Ray container's
		// restrictions: a restricted head keeps it restricted.
		{name: "restricted autoscaler without securityContext", strict: true,
			edit: func(rs *rayv1.RayService) { rs.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true) }},
		{name: "restricted autoscaler with a securityContext of its own", strict: true, wantRule: hubpolicy.RuleSeccomp,
			wantMsg: `hubPolicy/seccomp: the autoscaler (rayClusterConfig.autoscalerOptions) sets no securityContext.seccompProfile.type, nor does the head Pod`,
			edit: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
				rs.Spec.RayClusterSpec.AutoscalerOptions = &rayv1.AutoscalerOptions{SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				}}
			}},
		{name: "restricted volume", strict: true, wantRule: hubpolicy.RuleVolumeTypes,
			wantMsg: `hubPolicy/volumeTypes: volume "data" in headGroupSpec is none of configMap, csi, downwardAPI, emptyDir, ephemeral, image, persistentVolumeClaim, projected, secret`,
			edit: func(rs *rayv1.RayService) {
				head(rs).Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/"}}}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := strings.NewReplacer(" ", "-", "_", "-").Replace(strings.ToLower(tt.name))
			c, build := g.hub, rayService
			if tt.strict {
				c, build = g.strict, restrictedService
			}
			rs := build(name, tt.edit)
			checkWrite(t, c.Create(ctx, rs, client.DryRunAll), tt.wantRule, tt.wantMsg)
		})
	}
}

// testNamespaceLevel checks RuleNamespaceLevel: the namespace's enforce label as the API
// server has it, and the admin's exemption.
func testNamespaceLevel(t *testing.T, g guardEnv) {
	ctx := t.Context()
	tests := []struct {
		name, namespace string
		c               client.Client
		wantRule        string
		wantMsg         string
	}{
		{name: "baseline namespace", namespace: "team-b", c: g.hub},
		{name: "restricted namespace", namespace: "team-r", c: g.hub},
		{name: "unlabelled namespace", namespace: "bare", c: g.hub, wantRule: hubpolicy.RuleNamespaceLevel,
			wantMsg: `hubPolicy/namespaceLevel: RayService "unlabelled-namespace" in namespace "bare", which enforces no pod-security.kubernetes.io/enforce, looser than baseline`},
		{name: "unlabelled namespace the admin exempted", namespace: "bare", c: g.loose},
		{name: "pinned version", namespace: "pinned", c: g.hub, wantRule: hubpolicy.RuleNamespaceLevel,
			wantMsg: `hubPolicy/namespaceLevel: RayService "pinned-version" in namespace "pinned", whose pod-security.kubernetes.io/enforce-version is v1.30 (only latest)`},
		{name: "baseline namespace at restricted", namespace: "team-b", c: g.strict, wantRule: hubpolicy.RuleNamespaceLevel,
			wantMsg: `hubPolicy/namespaceLevel: RayService "baseline-namespace-at-restricted" in namespace "team-b", which enforces pod-security.kubernetes.io/enforce=baseline, looser than restricted`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := strings.ReplaceAll(tt.name, " ", "-")
			rs := restrictedService(name, func(rs *rayv1.RayService) { rs.Namespace = tt.namespace })
			checkWrite(t, tt.c.Create(ctx, rs, client.DryRunAll), tt.wantRule, tt.wantMsg)
		})
	}
}

// largest is a RayService conforming to restricted with the given worker groups, each Pod
// template with containers and inits init containers that set every field a check reads,
// probes and ports, and volumes emptyDir volumes. 1,000 groups of 3, 2 and 6 bring the request
// close to the API server's 3 MiB limit; of 1, 1 and 2 under etcd's 1.5 MiB.
func largest(name string, groups, containers, inits, volumes int) *rayv1.RayService {
	return restrictedService(name, func(rs *rayv1.RayService) {
		rs.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
		rs.Spec.RayClusterSpec.AutoscalerOptions = &rayv1.AutoscalerOptions{SecurityContext: restrictedContext()}
		spec := worker(rs)
		spec.SecurityContext = &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			Sysctls:        []corev1.Sysctl{{Name: "net.ipv4.tcp_syncookies", Value: "1"}},
		}
		ray := spec.Containers[0]
		ray.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "container_t"}
		ray.SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
		ray.Ports = []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 8081}}
		ray.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}}
		spec.Containers, spec.InitContainers = nil, nil
		for i := range max(containers, inits) {
			c := *ray.DeepCopy()
			c.Name = fmt.Sprintf("c%d", i)
			if i < containers {
				spec.Containers = append(spec.Containers, c)
			}
			c.Name = fmt.Sprintf("i%d", i)
			if i < inits {
				spec.InitContainers = append(spec.InitContainers, c)
			}
		}
		for i := range volumes {
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: fmt.Sprintf("v%d", i), VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}
		first := rs.Spec.RayClusterSpec.WorkerGroupSpecs[0]
		rs.Spec.RayClusterSpec.WorkerGroupSpecs = make([]rayv1.WorkerGroupSpec, groups)
		for i := range groups {
			rs.Spec.RayClusterSpec.WorkerGroupSpecs[i] = *first.DeepCopy()
			rs.Spec.RayClusterSpec.WorkerGroupSpecs[i].GroupName = fmt.Sprintf("g%d", i)
		}
	})
}

// testTypeChecking type checks the guard's policies as the API server's status controller
// does, against the ray.io and core schemas the API server publishes: the API server compiles a
// policy's expressions against untyped objects, so a misspelt field in has() would pass every
// request silently. No expression may draw a warning.
func testTypeChecking(t *testing.T, g guardEnv) {
	d, err := discovery.NewDiscoveryClientForConfig(g.config)
	if err != nil {
		t.Fatal(err)
	}
	checker := &validating.TypeChecker{SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: d}, RestMapper: g.admin.RESTMapper()}
	for _, level := range []string{hubpolicy.LevelBaseline, hubpolicy.LevelRestricted} {
		cfg := hubpolicy.Default()
		cfg.MinPodSecurityLevel = level
		objs, err := hubpolicy.Build(hubpolicy.DefaultName, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range objs.Policies {
			for _, w := range checker.Check(p) {
				t.Errorf("policy %s at %s: %s: %s", p.Name, level, w.FieldRef, w.Warning)
			}
			// Check looks at the validations only; the rules live in the variables.
			ctx := checker.CreateContext(p)
			for _, v := range p.Spec.Variables {
				if res := checker.CheckExpression(ctx, v.Expression); len(res) != 0 {
					t.Errorf("policy %s at %s: variable %s: %s", p.Name, level, v.Name, res)
				}
			}
		}
	}
}
