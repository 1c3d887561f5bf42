package hubpolicy

import (
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// The Pod Security checks beyond the rules with a setting of their own, each the CEL of the
// k8s.io/pod-security-admission check of the same name at version latest. A check reads the Pod
// template (spec and annotations), every container of it (containers, initContainers,
// ephemeralContainers) and the autoscaler sidecar the spoke adds to the head Pod, whose
// securityContext is autoscalerOptions.securityContext. The wait-gcs-ready init container the
// spoke adds to workers copies the first container's securityContext, so the first container's
// checks cover it.

// safeSysctls are the sysctls Pod Security baseline allows (its list as of Kubernetes 1.32).
var safeSysctls = []string{
	"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
}

// seLinuxTypes are the SELinux types Pod Security baseline allows ("" is no type).
var seLinuxTypes = []string{"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}

// restrictedVolumeSources are the volume sources Pod Security restricted allows.
var restrictedVolumeSources = []string{
	"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim", "projected", "secret",
}

// appArmorAnnotationPrefix starts the deprecated per-container AppArmor annotations.
const appArmorAnnotationPrefix = "container.apparmor.security.beta.kubernetes.io/"

// validProfiles are the seccomp and AppArmor profile types baseline allows.
const validProfiles = "['RuntimeDefault', 'Localhost']"

// secCtx is where a securityContext is: base, then path (empty for the autoscaler's, whose base
// is the securityContext itself).
type secCtx struct {
	base string
	path []string
}

// containerSC is a container's (read as c), autoscalerSC the autoscaler's (read as s).
var (
	containerSC  = secCtx{base: "c", path: []string{"securityContext"}}
	autoscalerSC = secCtx{base: "s"}
)

// podSC is the Pod-level securityContext of the PodSpec expression spec.
func podSC(spec string) secCtx { return secCtx{base: spec, path: []string{"securityContext"}} }

// has is the CEL condition that fields below the securityContext are set.
func (s secCtx) has(fields ...string) string {
	return present(s.base, append(slices.Clone(s.path), fields...)...)
}

// get is the CEL expression of fields below the securityContext.
func (s secCtx) get(fields ...string) string {
	return strings.Join(append(append([]string{s.base}, s.path...), fields...), ".")
}

// scCheck is a check of a securityContext: pred (CEL bool) holds when it is refused and what
// (CEL string) says why; spec is the PodSpec the securityContext belongs to.
type scCheck func(sc secCtx, spec string) (pred, what string)

// podCheck is one Pod Security rule: at restricted only or from baseline on, its Pod-level
// refusals (CEL list of strings, may be empty), a check of every container's and the
// autoscaler's securityContext, a check of every container as c, and the refusal of the
// autoscaler when the head Pod's settings leave it out of the level.
type podCheck struct {
	rule       string
	restricted bool
	pod        func(spec, where string) string
	sc         scCheck
	container  func(spec string) (pred, what string)
	autoscaler func(spec string) (pred, what string)
}

// podCheckVariables are the refusal lists of the Pod Security checks, one variable per rule.
func podCheckVariables() []admissionregistrationv1.Variable {
	var vs []admissionregistrationv1.Variable
	for _, c := range podChecks() {
		vs = append(vs, admissionregistrationv1.Variable{Name: c.rule, Expression: c.expression()})
	}
	return vs
}

// expression is the CEL list of the check's refusals, empty below its level.
func (p podCheck) expression() string {
	level := "variables.baseline"
	if p.restricted {
		level = "variables.restricted"
	}
	perSpec := func(spec, where string) string {
		var parts []string
		if p.pod != nil {
			parts = append(parts, p.pod(spec, where))
		}
		if p.sc != nil {
			pred, what := p.sc(containerSC, spec)
			parts = append(parts, containerRefusals(spec, where, pred, what))
		}
		if p.container != nil {
			pred, what := p.container(spec)
			parts = append(parts, containerRefusals(spec, where, pred, what))
		}
		return strings.Join(parts, " + ")
	}
	out := perTemplate(perSpec)
	const head = "variables.head.template.spec"
	if p.sc != nil {
		pred, what := p.sc(autoscalerSC, head)
		out += " + " + autoscalerRefusal(pred, what)
	}
	if p.autoscaler != nil {
		pred, what := p.autoscaler(head)
		out += fmt.Sprintf(" + (variables.autoscaling && %s ? ['the autoscaler (rayClusterConfig.autoscalerOptions)' + %s] : [])", pred, what)
	}
	return fmt.Sprintf("%s ? %s : []", level, out)
}

// podChecks are the Pod Security checks in Rules' order.
func podChecks() []podCheck {
	return append(baselineChecks(), restrictedChecks()...)
}

// baselineChecks are the baseline checks without a rule of their own above.
func baselineChecks() []podCheck {
	return []podCheck{
		{rule: RuleAppArmor, pod: appArmorPod, sc: func(sc secCtx, _ string) (string, string) {
			t := sc.get("appArmorProfile", "type")
			return sc.has("appArmorProfile") + " && !(" + t + " in " + validProfiles + ")",
				"' sets securityContext.appArmorProfile.type ' + " + t
		}},
		{rule: RuleSELinux, pod: func(spec, where string) string {
			sc := podSC(spec)
			return fmt.Sprintf("(%s && %s ? [%s + ' sets securityContext.seLinuxOptions ' + %s] : [])",
				sc.has("seLinuxOptions"), badSELinux(sc.get("seLinuxOptions")), where, describeSELinux(sc.get("seLinuxOptions")))
		}, sc: func(sc secCtx, _ string) (string, string) {
			o := sc.get("seLinuxOptions")
			return sc.has("seLinuxOptions") + " && " + badSELinux(o), "' sets securityContext.seLinuxOptions ' + " + describeSELinux(o)
		}},
		{rule: RuleProcMount, sc: func(sc secCtx, spec string) (string, string) {
			return fmt.Sprintf("%s && %s != 'Default' && (variables.restricted || !(%s))", sc.has("procMount"), sc.get("procMount"), userNamespace(spec)),
				"' sets securityContext.procMount ' + " + sc.get("procMount")
		}},
		{rule: RuleSeccomp, pod: func(spec, where string) string {
			sc := podSC(spec)
			return fmt.Sprintf("(%s && !(%s in %s) ? [%s + ' sets securityContext.seccompProfile.type ' + %[2]s] : [])",
				sc.has("seccompProfile"), sc.get("seccompProfile", "type"), validProfiles, where)
		}, sc: func(sc secCtx, _ string) (string, string) {
			t := sc.get("seccompProfile", "type")
			return sc.has("seccompProfile") + " && !(" + t + " in " + validProfiles + ")", "' sets securityContext.seccompProfile.type ' + " + t
		}, container: func(spec string) (string, string) {
			return fmt.Sprintf("variables.restricted && !(%s) && !(%s) && !(%s)", windows(spec), containerSC.has("seccompProfile"), podSeccompSet(spec)),
				"' sets no securityContext.seccompProfile.type, nor does its Pod'"
		}, autoscaler: func(spec string) (string, string) {
			return fmt.Sprintf("variables.restricted && !(%s) && !(variables.autoscaler + variables.autoscalerInherited).exists(s, has(s.seccompProfile)) && !(%s)", windows(spec), podSeccompSet(spec)),
				"' sets no securityContext.seccompProfile.type, nor does the head Pod'"
		}},
		{rule: RuleSysctls, pod: func(spec, where string) string {
			sc := podSC(spec)
			return fmt.Sprintf("(%s ? %s.filter(x, !(x.name in %s)).map(x, %s + ' sets sysctl ' + x.name) : [])",
				sc.has("sysctls"), sc.get("sysctls"), literal(safeSysctls), where)
		}},
		{rule: RuleHostProcess, pod: func(spec, where string) string {
			sc := podSC(spec)
			return fmt.Sprintf("(%s && %s ? [%s + ' sets securityContext.windowsOptions.hostProcess'] : [])",
				sc.has("windowsOptions", "hostProcess"), sc.get("windowsOptions", "hostProcess"), where)
		}, sc: func(sc secCtx, _ string) (string, string) {
			return sc.has("windowsOptions", "hostProcess") + " && " + sc.get("windowsOptions", "hostProcess"),
				"' sets securityContext.windowsOptions.hostProcess'"
		}},
		{rule: RuleHostProbes, container: func(string) (string, string) {
			fields := hostHandlers()
			conds := make([]string, len(fields))
			names := make([]string, len(fields))
			for i, f := range fields {
				conds[i] = f.cond
				names[i] = fmt.Sprintf("(%s ? '%s' : '')", f.cond, f.name)
			}
			return strings.Join(conds, " || "), "' sets a host in ' + [" + strings.Join(names, ", ") + "].filter(x, x != '').join(', ')"
		}},
	}
}

// restrictedChecks are the checks restricted adds to baseline.
func restrictedChecks() []podCheck {
	return []podCheck{
		{rule: RuleVolumeTypes, restricted: true, pod: func(spec, where string) string {
			allowed := make([]string, len(restrictedVolumeSources))
			for i, s := range restrictedVolumeSources {
				allowed[i] = "has(v." + s + ")"
			}
			return fmt.Sprintf(`(has(%[1]s.volumes) ? %[1]s.volumes : []).filter(v, !(%[2]s)).map(v, 'volume "' + v.name + '" in ' + %[3]s + ' is none of %[4]s')`,
				spec, strings.Join(allowed, " || "), where, strings.Join(restrictedVolumeSources, ", "))
		}},
		{rule: RuleAllowPrivilegeEscalation, restricted: true, container: func(spec string) (string, string) {
			return fmt.Sprintf("!(%s) && !(%s && !%s)", windows(spec), containerSC.has("allowPrivilegeEscalation"), containerSC.get("allowPrivilegeEscalation")),
				"' does not set securityContext.allowPrivilegeEscalation false'"
		}, autoscaler: func(spec string) (string, string) {
			return fmt.Sprintf("!(%s) && !(variables.autoscaler + variables.autoscalerInherited).exists(s, has(s.allowPrivilegeEscalation) && !s.allowPrivilegeEscalation)", windows(spec)),
				"' does not set securityContext.allowPrivilegeEscalation false'"
		}},
		runAsNonRootCheck(),
		{rule: RuleRunAsUser, restricted: true, pod: func(spec, where string) string {
			sc := podSC(spec)
			return fmt.Sprintf("(!(%s) && %s && %s == 0 ? [%s + ' sets securityContext.runAsUser 0'] : [])", userNamespace(spec), sc.has("runAsUser"), sc.get("runAsUser"), where)
		}, sc: func(sc secCtx, spec string) (string, string) {
			return fmt.Sprintf("!(%s) && %s && %s == 0", userNamespace(spec), sc.has("runAsUser"), sc.get("runAsUser")), "' sets securityContext.runAsUser 0'"
		}},
		capabilitiesRestrictedCheck(),
	}
}

// runAsNonRootCheck refuses runAsNonRoot false anywhere, and containers with runAsNonRoot unset
// in a Pod without runAsNonRoot true; a Pod with its own user namespace is exempt.
func runAsNonRootCheck() podCheck {
	return podCheck{rule: RuleRunAsNonRoot, restricted: true, pod: func(spec, where string) string {
		sc := podSC(spec)
		return fmt.Sprintf("(!(%s) && %s && !%s ? [%s + ' sets securityContext.runAsNonRoot false'] : [])", userNamespace(spec), sc.has("runAsNonRoot"), sc.get("runAsNonRoot"), where)
	}, sc: func(sc secCtx, spec string) (string, string) {
		return fmt.Sprintf("!(%s) && %s && !%s", userNamespace(spec), sc.has("runAsNonRoot"), sc.get("runAsNonRoot")), "' sets securityContext.runAsNonRoot false'"
	}, container: func(spec string) (string, string) {
		return fmt.Sprintf("!(%s) && !(%s) && !(%s)", userNamespace(spec), containerSC.has("runAsNonRoot"), podRunsAsNonRoot(spec)),
			"' sets no securityContext.runAsNonRoot, nor does its Pod'"
	}, autoscaler: func(spec string) (string, string) {
		return fmt.Sprintf("!(%s) && !(variables.autoscaler + variables.autoscalerInherited).exists(s, has(s.runAsNonRoot)) && !(%s)", userNamespace(spec), podRunsAsNonRoot(spec)),
			"' sets no securityContext.runAsNonRoot, nor does the head Pod'"
	}}
}

// capabilitiesRestrictedCheck refuses, in Linux Pods, containers that do not drop ALL or add
// anything but NET_BIND_SERVICE.
func capabilitiesRestrictedCheck() podCheck {
	dropsAll := func(sc secCtx) string {
		return sc.has("capabilities", "drop") + " && 'ALL' in " + sc.get("capabilities", "drop")
	}
	addsMore := func(sc secCtx) string {
		return sc.has("capabilities", "add") + " && " + sc.get("capabilities", "add") + ".exists(x, x != 'NET_BIND_SERVICE')"
	}
	return podCheck{rule: RuleCapabilitiesRestricted, restricted: true, sc: func(sc secCtx, spec string) (string, string) {
		return fmt.Sprintf("!(%s) && %s", windows(spec), addsMore(sc)),
			"' adds capabilities ' + " + sc.get("capabilities", "add") + ".filter(x, x != 'NET_BIND_SERVICE').join(', ') + ' (only NET_BIND_SERVICE)'"
	}, container: func(spec string) (string, string) {
		return fmt.Sprintf("!(%s) && !(%s)", windows(spec), dropsAll(containerSC)), "' does not drop ALL capabilities'"
	}, autoscaler: func(spec string) (string, string) {
		return fmt.Sprintf("!(%s) && !(variables.autoscaler + variables.autoscalerInherited).exists(s, %s)", windows(spec), dropsAll(autoscalerSC)), "' does not drop ALL capabilities'"
	}}
}

// appArmorPod refuses the Pod-level AppArmor profile and the AppArmor annotations of the
// template whose spec is spec.
func appArmorPod(spec, where string) string {
	sc := podSC(spec)
	meta := strings.TrimSuffix(spec, ".spec") + ".metadata"
	ann := meta + ".annotations"
	return fmt.Sprintf("(%[1]s && !(%[2]s in %[3]s) ? [%[4]s + ' sets securityContext.appArmorProfile.type ' + %[2]s] : []) + "+
		"(has(%[5]s) && has(%[6]s) ? %[6]s.filter(k, k.startsWith('%[7]s') && !(%[6]s[k] == '' || %[6]s[k] == 'runtime/default' || %[6]s[k].startsWith('localhost/')))"+
		".map(k, %[4]s + ' has annotation ' + k + '=' + %[6]s[k]) : [])",
		sc.has("appArmorProfile"), sc.get("appArmorProfile", "type"), validProfiles, where, meta, ann, appArmorAnnotationPrefix)
}

// badSELinux is the CEL condition that the seLinuxOptions o are outside baseline.
func badSELinux(o string) string {
	return fmt.Sprintf("(has(%[1]s.type) && !(%[1]s.type in %[2]s) || has(%[1]s.user) && %[1]s.user != '' || has(%[1]s.role) && %[1]s.role != '')", o, literal(seLinuxTypes))
}

// describeSELinux is the CEL string naming the seLinuxOptions o's type, user and role.
func describeSELinux(o string) string {
	return fmt.Sprintf("'type \"' + (has(%[1]s.type) ? %[1]s.type : '') + '\", user \"' + (has(%[1]s.user) ? %[1]s.user : '') + '\", role \"' + (has(%[1]s.role) ? %[1]s.role : '') + '\"'", o)
}

// windows is the CEL condition that the PodSpec spec is a Windows Pod, which the restricted
// checks of Linux settings skip.
func windows(spec string) string {
	return fmt.Sprintf("has(%[1]s.os) && %[1]s.os.name == 'windows'", spec)
}

// userNamespace is the CEL condition that the PodSpec spec runs in its own user namespace.
func userNamespace(spec string) string {
	return fmt.Sprintf("has(%[1]s.hostUsers) && !%[1]s.hostUsers", spec)
}

// podSeccompSet is the CEL condition that the PodSpec spec sets an allowed seccomp profile.
func podSeccompSet(spec string) string {
	sc := podSC(spec)
	return sc.has("seccompProfile") + " && " + sc.get("seccompProfile", "type") + " in " + validProfiles
}

// podRunsAsNonRoot is the CEL condition that the PodSpec spec sets runAsNonRoot true.
func podRunsAsNonRoot(spec string) string {
	sc := podSC(spec)
	return sc.has("runAsNonRoot") + " && " + sc.get("runAsNonRoot")
}

// hostHandler is a probe or lifecycle handler of a container (as c) and the CEL condition that
// it names a host.
type hostHandler struct{ name, cond string }

// hostHandlers are the container's probes and lifecycle handlers that may name a host.
func hostHandlers() []hostHandler {
	var out []hostHandler
	for _, h := range []struct {
		name string
		path []string
	}{
		{"livenessProbe", []string{"livenessProbe"}}, {"readinessProbe", []string{"readinessProbe"}},
		{"startupProbe", []string{"startupProbe"}}, {"lifecycle.postStart", []string{"lifecycle", "postStart"}},
		{"lifecycle.preStop", []string{"lifecycle", "preStop"}},
	} {
		var conds []string
		for _, action := range []string{"httpGet", "tcpSocket"} {
			p := append(slices.Clone(h.path), action, "host")
			conds = append(conds, present("c", p...)+" && c."+strings.Join(p, ".")+" != ''")
		}
		out = append(out, hostHandler{name: h.name, cond: "(" + strings.Join(conds, " || ") + ")"})
	}
	return out
}
