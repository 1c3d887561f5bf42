package guardconformance

import (
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// entry is one RayService of the corpus: a change to the level's base RayService.
type entry struct {
	name string
	edit func(*rayv1.RayService)
	// guardStricter says why the guard refuses what Pod Security admission would let through,
	// when it does so on purpose; empty when the two must agree.
	guardStricter string
}

// containerEdit changes one container's settings; scEdit its securityContext (never nil).
type (
	containerEdit func(*corev1.Container)
	scEdit        func(*corev1.SecurityContext)
)

// securityContextEdits are the container-level values of the checks, each read by some
// check of baseline or restricted (or allowed by both, to catch a guard that refuses too much).
func securityContextEdits() []struct {
	name string
	edit scEdit
} {
	return []struct {
		name string
		edit scEdit
	}{
		{"privileged", func(sc *corev1.SecurityContext) { sc.Privileged = ptr.To(true) }},
		{"privileged false", func(sc *corev1.SecurityContext) { sc.Privileged = ptr.To(false) }},
		{"add SYS_ADMIN", func(sc *corev1.SecurityContext) { sc.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"} }},
		{"add CHOWN", func(sc *corev1.SecurityContext) { sc.Capabilities.Add = []corev1.Capability{"CHOWN"} }},
		{"add NET_BIND_SERVICE", func(sc *corev1.SecurityContext) { sc.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"} }},
		{"drop nothing", func(sc *corev1.SecurityContext) { sc.Capabilities.Drop = nil }},
		{"appArmor Unconfined", func(sc *corev1.SecurityContext) {
			sc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}},
		{"appArmor Localhost", func(sc *corev1.SecurityContext) {
			sc.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("ray")}
		}},
		{"seLinux type spc_t", func(sc *corev1.SecurityContext) { sc.SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"} }},
		{"seLinux type container_engine_t", func(sc *corev1.SecurityContext) {
			sc.SELinuxOptions = &corev1.SELinuxOptions{Type: "container_engine_t"}
		}},
		{"seLinux user", func(sc *corev1.SecurityContext) { sc.SELinuxOptions = &corev1.SELinuxOptions{User: "system_u"} }},
		{"seLinux role", func(sc *corev1.SecurityContext) { sc.SELinuxOptions = &corev1.SELinuxOptions{Role: "object_r"} }},
		{"seLinux level only", func(sc *corev1.SecurityContext) { sc.SELinuxOptions = &corev1.SELinuxOptions{Level: "s0:c1"} }},
		{"procMount Unmasked", func(sc *corev1.SecurityContext) { sc.ProcMount = ptr.To(corev1.UnmaskedProcMount) }},
		{"procMount Default", func(sc *corev1.SecurityContext) { sc.ProcMount = ptr.To(corev1.DefaultProcMount) }},
		{"seccomp Unconfined", func(sc *corev1.SecurityContext) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}},
		{"seccomp Localhost", func(sc *corev1.SecurityContext) {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("ray.json")}
		}},
		{"seccomp unset", func(sc *corev1.SecurityContext) { sc.SeccompProfile = nil }},
		{"windows hostProcess", func(sc *corev1.SecurityContext) {
			sc.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		}},
		{"allowPrivilegeEscalation true", func(sc *corev1.SecurityContext) { sc.AllowPrivilegeEscalation = ptr.To(true) }},
		{"allowPrivilegeEscalation unset", func(sc *corev1.SecurityContext) { sc.AllowPrivilegeEscalation = nil }},
		{"runAsNonRoot false", func(sc *corev1.SecurityContext) { sc.RunAsNonRoot = ptr.To(false) }},
		{"runAsNonRoot unset", func(sc *corev1.SecurityContext) { sc.RunAsNonRoot = nil }},
		{"runAsUser 0", func(sc *corev1.SecurityContext) { sc.RunAsUser = ptr.To[int64](0) }},
		{"runAsUser 1000", func(sc *corev1.SecurityContext) { sc.RunAsUser = ptr.To[int64](1000) }},
	}
}

// containerEdits are the container-level values of the checks outside the securityContext.
func containerEdits() []struct {
	name string
	edit containerEdit
} {
	host := func(h string) *corev1.ProbeHandler {
		return &corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: h, Port: intOrPort(8080)}}
	}
	return []struct {
		name string
		edit containerEdit
	}{
		{"hostPort", func(c *corev1.Container) {
			c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 9000, HostPort: 9000})
		}},
		{"containerPort only", func(c *corev1.Container) { c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: 9000}) }},
		{"livenessProbe httpGet host", func(c *corev1.Container) { c.LivenessProbe = &corev1.Probe{ProbeHandler: *host("10.0.0.1")} }},
		{"readinessProbe tcpSocket host", func(c *corev1.Container) {
			c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "10.0.0.1", Port: intOrPort(8080)}}}
		}},
		{"startupProbe httpGet host", func(c *corev1.Container) { c.StartupProbe = &corev1.Probe{ProbeHandler: *host("metadata.internal")} }},
		{"startupProbe without host", func(c *corev1.Container) { c.StartupProbe = &corev1.Probe{ProbeHandler: *host("")} }},
		{"postStart tcpSocket host", func(c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Host: "10.0.0.1", Port: intOrPort(22)}}}
		}},
		{"preStop httpGet host", func(c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: "10.0.0.1", Port: intOrPort(80)}}}
		}},
	}
}

// podEdits are the Pod-level values of the checks, on a Pod template.
func podEdits() []struct {
	name string
	edit func(*corev1.PodTemplateSpec)
} {
	psc := func(t *corev1.PodTemplateSpec) *corev1.PodSecurityContext {
		if t.Spec.SecurityContext == nil {
			t.Spec.SecurityContext = &corev1.PodSecurityContext{}
		}
		return t.Spec.SecurityContext
	}
	volume := func(name string, src corev1.VolumeSource) func(*corev1.PodTemplateSpec) {
		return func(t *corev1.PodTemplateSpec) {
			t.Spec.Volumes = append(t.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: src})
		}
	}
	annotate := func(value string) func(*corev1.PodTemplateSpec) {
		return func(t *corev1.PodTemplateSpec) {
			t.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/" + t.Spec.Containers[0].Name: value}
		}
	}
	return []struct {
		name string
		edit func(*corev1.PodTemplateSpec)
	}{
		{"hostNetwork", func(t *corev1.PodTemplateSpec) { t.Spec.HostNetwork = true }},
		{"hostPID", func(t *corev1.PodTemplateSpec) { t.Spec.HostPID = true }},
		{"hostIPC", func(t *corev1.PodTemplateSpec) { t.Spec.HostIPC = true }},
		{"hostPath volume", volume("host", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run"}})},
		{"nfs volume", volume("nfs", corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example", Path: "/"}})},
		{"gitRepo volume", volume("git", corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Repository: "https://example.com/r"}})},
		{"configMap volume", volume("cm", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}})},
		{"projected volume", volume("proj", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}})},
		{"pod seccomp Unconfined", func(t *corev1.PodTemplateSpec) {
			psc(t).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}},
		{"pod seLinux type spc_t", func(t *corev1.PodTemplateSpec) { psc(t).SELinuxOptions = &corev1.SELinuxOptions{Type: "spc_t"} }},
		{"pod seLinux role", func(t *corev1.PodTemplateSpec) { psc(t).SELinuxOptions = &corev1.SELinuxOptions{Role: "r"} }},
		{"pod appArmor Unconfined", func(t *corev1.PodTemplateSpec) {
			psc(t).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
		}},
		{"pod appArmor RuntimeDefault", func(t *corev1.PodTemplateSpec) {
			psc(t).AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
		}},
		{"appArmor annotation unconfined", annotate("unconfined")},
		{"appArmor annotation runtime/default", annotate("runtime/default")},
		{"appArmor annotation localhost", annotate("localhost/ray")},
		{"sysctl kernel.msgmax", func(t *corev1.PodTemplateSpec) {
			psc(t).Sysctls = []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}
		}},
		{"sysctl net.ipv4.tcp_rmem", func(t *corev1.PodTemplateSpec) {
			psc(t).Sysctls = []corev1.Sysctl{{Name: "net.ipv4.tcp_rmem", Value: "4096 87380 6291456"}}
		}},
		{"pod windows hostProcess", func(t *corev1.PodTemplateSpec) {
			psc(t).WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		}},
		{"pod runAsUser 0", func(t *corev1.PodTemplateSpec) { psc(t).RunAsUser = ptr.To[int64](0) }},
		{"pod runAsNonRoot false", func(t *corev1.PodTemplateSpec) { psc(t).RunAsNonRoot = ptr.To(false) }},
		{"pod runAsNonRoot true, containers unset", func(t *corev1.PodTemplateSpec) {
			psc(t).RunAsNonRoot = ptr.To(true)
			eachSC(t, func(sc *corev1.SecurityContext) { sc.RunAsNonRoot = nil })
		}},
		{"pod seccomp RuntimeDefault, containers unset", func(t *corev1.PodTemplateSpec) {
			psc(t).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
			eachSC(t, func(sc *corev1.SecurityContext) { sc.SeccompProfile = nil })
		}},
		{"user namespace, procMount Unmasked", func(t *corev1.PodTemplateSpec) {
			t.Spec.HostUsers = ptr.To(false)
			eachSC(t, func(sc *corev1.SecurityContext) { sc.ProcMount = ptr.To(corev1.UnmaskedProcMount) })
		}},
		{"user namespace, root", func(t *corev1.PodTemplateSpec) {
			t.Spec.HostUsers = ptr.To(false)
			eachSC(t, func(sc *corev1.SecurityContext) { sc.RunAsNonRoot, sc.RunAsUser = nil, ptr.To[int64](0) })
		}},
		{"windows Pod, Linux settings unset", func(t *corev1.PodTemplateSpec) {
			t.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
			eachSC(t, func(sc *corev1.SecurityContext) {
				sc.AllowPrivilegeEscalation, sc.SeccompProfile, sc.Capabilities = nil, nil, nil
			})
		}},
	}
}

// eachSC edits the securityContext of every container of t, creating it when missing.
func eachSC(t *corev1.PodTemplateSpec, edit scEdit) {
	for _, list := range [][]corev1.Container{t.Spec.Containers, t.Spec.InitContainers} {
		for i := range list {
			if list[i].SecurityContext == nil {
				list[i].SecurityContext = &corev1.SecurityContext{}
			}
			edit(list[i].SecurityContext)
		}
	}
}

// containerLocation is where a container-level value goes: a container of a Pod template of
// the RayService, made or found by at.
type containerLocation struct {
	name string
	at   func(rs *rayv1.RayService, base *corev1.SecurityContext) *corev1.Container
}

// containerLocations are the containers the hub's RayService controls directly.
func containerLocations() []containerLocation {
	headT := func(rs *rayv1.RayService) *corev1.PodSpec { return &rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec }
	workerT := func(rs *rayv1.RayService) *corev1.PodSpec {
		return &rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec
	}
	initC := func(spec *corev1.PodSpec, base *corev1.SecurityContext) *corev1.Container {
		spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: "setup", Image: "busybox", SecurityContext: base.DeepCopy()})
		return &spec.InitContainers[len(spec.InitContainers)-1]
	}
	return []containerLocation{
		{"head container", func(rs *rayv1.RayService, _ *corev1.SecurityContext) *corev1.Container {
			return &headT(rs).Containers[0]
		}},
		{"head init container", func(rs *rayv1.RayService, base *corev1.SecurityContext) *corev1.Container {
			return initC(headT(rs), base)
		}},
		{"head ephemeral container", func(rs *rayv1.RayService, base *corev1.SecurityContext) *corev1.Container {
			spec := headT(rs)
			spec.EphemeralContainers = append(spec.EphemeralContainers, corev1.EphemeralContainer{
				EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox", SecurityContext: base.DeepCopy()},
			})
			return (*corev1.Container)(&spec.EphemeralContainers[len(spec.EphemeralContainers)-1].EphemeralContainerCommon)
		}},
		{"worker container (and wait-gcs-ready)", func(rs *rayv1.RayService, _ *corev1.SecurityContext) *corev1.Container {
			return &workerT(rs).Containers[0]
		}},
		{"worker sidecar", func(rs *rayv1.RayService, base *corev1.SecurityContext) *corev1.Container {
			spec := workerT(rs)
			spec.Containers = append(spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox", SecurityContext: base.DeepCopy()})
			return &spec.Containers[len(spec.Containers)-1]
		}},
		{"worker init container", func(rs *rayv1.RayService, base *corev1.SecurityContext) *corev1.Container {
			return initC(workerT(rs), base)
		}},
	}
}

// corpus is every check's values at every location they can take in a RayService, for a base
// whose containers carry base (the level's conforming securityContext, or nil).
func corpus(base *corev1.SecurityContext) []entry {
	var out []entry
	ensure := func(c *corev1.Container) *corev1.SecurityContext {
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		if c.SecurityContext.Capabilities == nil {
			c.SecurityContext.Capabilities = &corev1.Capabilities{}
		}
		return c.SecurityContext
	}
	for _, loc := range containerLocations() {
		for _, e := range securityContextEdits() {
			out = append(out, entry{name: loc.name + ": " + e.name, edit: func(rs *rayv1.RayService) { e.edit(ensure(loc.at(rs, base))) }})
		}
		for _, e := range containerEdits() {
			out = append(out, entry{name: loc.name + ": " + e.name, edit: func(rs *rayv1.RayService) { e.edit(loc.at(rs, base)) }})
		}
	}
	for _, e := range podEdits() {
		out = append(out,
			entry{name: "head Pod: " + e.name, edit: func(rs *rayv1.RayService) { e.edit(&rs.Spec.RayClusterSpec.HeadGroupSpec.Template) }},
			entry{name: "worker Pod: " + e.name, edit: func(rs *rayv1.RayService) { e.edit(&rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template) }})
	}
	return append(out, autoscalerCorpus(base)...)
}

// autoscalerCorpus is the autoscaler sidecar the spoke adds to the head Pod, with and without
// autoscalerOptions.securityContext.
func autoscalerCorpus(base *corev1.SecurityContext) []entry {
	autoscale := func(sc *corev1.SecurityContext) func(*rayv1.RayService) {
		return func(rs *rayv1.RayService) {
			rs.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
			if sc != nil {
				rs.Spec.RayClusterSpec.AutoscalerOptions = &rayv1.AutoscalerOptions{SecurityContext: sc}
			}
		}
	}
	out := []entry{
		// The sidecar the spoke adds carries no securityContext of its own: at restricted it
		// fails allowPrivilegeEscalation and capabilities whatever the head Pod sets, so both
		// Pod Security and the guard refuse an autoscaling RayService without one.
		{name: "autoscaler: no autoscalerOptions (the spoke's sidecar as built)", edit: autoscale(nil)},
		{name: "autoscaler: no autoscalerOptions, head Pod runAsNonRoot and seccomp set", edit: func(rs *rayv1.RayService) {
			autoscale(nil)(rs)
			rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			}
		}},
		{name: "autoscaler: the level's securityContext", edit: autoscale(base.DeepCopy())},
		{name: "autoscaler disabled: privileged autoscalerOptions", guardStricter: "the guard checks autoscalerOptions even when no sidecar runs",
			edit: func(rs *rayv1.RayService) {
				rs.Spec.RayClusterSpec.AutoscalerOptions = &rayv1.AutoscalerOptions{SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}
			}},
	}
	for _, e := range securityContextEdits() {
		sc := base.DeepCopy()
		if sc == nil {
			sc = &corev1.SecurityContext{}
		}
		if sc.Capabilities == nil {
			sc.Capabilities = &corev1.Capabilities{}
		}
		e.edit(sc)
		out = append(out, entry{name: "autoscaler: " + e.name, edit: autoscale(sc)})
	}
	return out
}

// entryName is a RayService name for the i-th entry.
func entryName(level string, i int) string { return fmt.Sprintf("%s-%03d", level, i) }
