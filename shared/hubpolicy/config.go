// Package hubpolicy is the member's guard on what the hub may run there: a
// ValidatingAdmissionPolicy (CEL) and its binding that refuse, for requests made as the hub's
// identity only, RayServices whose Pod templates step outside the member's Pod Security level
// (every check of "baseline" by default, of "restricted" when chosen, as
// k8s.io/pod-security-admission implements them), that run as other ServiceAccounts, expose
// Services, ask for an Ingress or a Gateway the member's admin did not allow, or land in a namespace whose Pod Security label is looser than that level; and
// Namespaces whose Pod Security labels weaken the member's; and, where the member is a traffic
// cluster, the hub's HTTPRoutes, Services and EndpointSlices in namespaces it may not write
// RayServices in and the member's admin did not name for traffic. The spoke chart renders it (generated from Build by `make manifests`),
// `rayfleet join` applies it when no chart did, and the hub reads its refusals with ParseDenial.
// It imports neither the hub nor the spoke.
package hubpolicy

import (
	"errors"
	"fmt"
	"slices"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
)

// DefaultName is the prefix of the guard's policies and bindings when `rayfleet join` applies
// them; the spoke chart prefixes them with the release's full name instead.
const DefaultName = "rayfleet-hub-guard"

// Rule names: the stable part of a refusal's message, "hubPolicy/<rule>: <what, where>".
const (
	// RuleWorkerGroups refuses a RayService with more worker groups than the guard checks
	// (Config.MaxWorkerGroups), so that its cost stays within the API server's CEL budget.
	RuleWorkerGroups = "workerGroups"
	// RuleNamespace refuses a RayService, Namespace or traffic object outside
	// Config.AllowedNamespaces (a traffic object in Config.TrafficNamespaces passes).
	RuleNamespace = "namespace"
	// RuleNamespaceOwner refuses a RayService in a namespace the hub did not create and the
	// member's admin did not allow (labels.HubNamespace, Config.AllowedExistingNamespaces),
	// and a Namespace whose labels.HubNamespace the hub sets to anything but "created" on
	// creating it, or adds, changes or removes afterwards; and a traffic object (HTTPRoute,
	// Service, EndpointSlice) in such a namespace, unless it is among Config.TrafficNamespaces.
	RuleNamespaceOwner = "namespaceOwner"
	// RuleServiceAccount refuses a Pod template running as a ServiceAccount outside
	// Config.AllowedServiceAccounts.
	RuleServiceAccount = "serviceAccount"
	// RulePrivileged refuses privileged containers (and a privileged autoscaler).
	RulePrivileged = "privileged"
	// RuleCapabilities refuses containers adding capabilities outside Config.AllowedCapabilities.
	RuleCapabilities = "capabilities"
	// RuleHostNamespaces refuses hostNetwork (unless Config.AllowHostNetwork), hostPID and hostIPC.
	RuleHostNamespaces = "hostNamespaces"
	// RuleHostPorts refuses container hostPorts (unless Config.AllowHostNetwork).
	RuleHostPorts = "hostPorts"
	// RuleHostPath refuses hostPath volumes.
	RuleHostPath = "hostPath"
	// RuleExternalIPs refuses externalIPs on the RayService's Services.
	RuleExternalIPs = "externalIPs"
	// RuleNodePorts refuses NodePort and LoadBalancer Services and explicit nodePorts (unless
	// Config.AllowNodePorts).
	RuleNodePorts = "nodePorts"
	// RuleIngress refuses headGroupSpec.enableIngress (unless Config.AllowIngress): KubeRay
	// then creates an Ingress for the head, of the class and with the annotations the
	// RayService's head asks for.
	RuleIngress = "ingress"
	// RuleGatewayClass refuses an incremental upgrade's gatewayClassName outside
	// Config.AllowedGatewayClasses: the spoke would create a Gateway of that class.
	RuleGatewayClass = "gatewayClass"
	// RulePodSecurityLabels refuses Namespaces whose pod-security.kubernetes.io/enforce labels
	// are weaker than Config.MinPodSecurityLevel or than the Namespace had.
	RulePodSecurityLabels = "podSecurityLabels"
	// RuleNamespaceLevel refuses a RayService in a namespace whose
	// pod-security.kubernetes.io/enforce label is missing or looser than
	// Config.MinPodSecurityLevel, outside Config.UnenforcedNamespaces: Pod Security admission is
	// the backstop for the Pods the spoke builds, whoever edits their templates later.
	RuleNamespaceLevel = "namespaceLevel"
)

// Rules of the Pod Security checks the guard adds at Config.MinPodSecurityLevel baseline and
// above; each is the upstream check of the same name, on every Pod template of a RayService.
const (
	// RuleAppArmor refuses AppArmor profiles other than RuntimeDefault and Localhost, in the
	// securityContexts and in the container.apparmor.security.beta.kubernetes.io annotations.
	RuleAppArmor = "appArmor"
	// RuleSELinux refuses SELinux types outside baseline's and any SELinux user or role.
	RuleSELinux = "seLinux"
	// RuleProcMount refuses a procMount other than Default (allowed at baseline in a Pod with
	// its own user namespace, hostUsers false).
	RuleProcMount = "procMount"
	// RuleSeccomp refuses the Unconfined seccomp profile and, at restricted, a container
	// without RuntimeDefault or Localhost set on it or on its Pod.
	RuleSeccomp = "seccomp"
	// RuleSysctls refuses sysctls outside the safe set.
	RuleSysctls = "sysctls"
	// RuleHostProcess refuses Windows HostProcess containers.
	RuleHostProcess = "hostProcess"
	// RuleHostProbes refuses probes and lifecycle handlers aimed at another host.
	RuleHostProbes = "hostProbes"
)

// Rules of the Pod Security checks the guard adds at Config.MinPodSecurityLevel restricted.
const (
	// RuleVolumeTypes refuses volumes other than configMap, csi, downwardAPI, emptyDir,
	// ephemeral, image, persistentVolumeClaim, projected and secret.
	RuleVolumeTypes = "volumeTypes"
	// RuleAllowPrivilegeEscalation refuses containers that do not set
	// allowPrivilegeEscalation false (Linux Pods).
	RuleAllowPrivilegeEscalation = "allowPrivilegeEscalation"
	// RuleRunAsNonRoot refuses containers not running with runAsNonRoot true, set on them or
	// on their Pod (unless the Pod has its own user namespace).
	RuleRunAsNonRoot = "runAsNonRoot"
	// RuleRunAsUser refuses runAsUser 0 (unless the Pod has its own user namespace).
	RuleRunAsUser = "runAsUser"
	// RuleCapabilitiesRestricted refuses containers that do not drop ALL capabilities or add
	// any but NET_BIND_SERVICE (Linux Pods).
	RuleCapabilitiesRestricted = "capabilitiesRestricted"
)

// Rules are every rule name, in the order the guard evaluates them: when a request breaks
// several, the refusal names the first.
func Rules() []string {
	return []string{
		RuleWorkerGroups, RuleNamespace, RuleNamespaceOwner, RuleServiceAccount, RulePrivileged, RuleCapabilities,
		RuleHostNamespaces, RuleHostPorts, RuleHostPath, RuleAppArmor, RuleSELinux, RuleProcMount,
		RuleSeccomp, RuleSysctls, RuleHostProcess, RuleHostProbes, RuleVolumeTypes,
		RuleAllowPrivilegeEscalation, RuleRunAsNonRoot, RuleRunAsUser, RuleCapabilitiesRestricted,
		RuleExternalIPs, RuleNodePorts, RuleIngress, RuleGatewayClass, RuleNamespaceLevel, RulePodSecurityLabels,
	}
}

// Pod Security levels (pod-security.kubernetes.io/enforce values), loosest first.
const (
	// LevelPrivileged enforces nothing.
	LevelPrivileged = "privileged"
	// LevelBaseline prevents known privilege escalations.
	LevelBaseline = "baseline"
	// LevelRestricted is the hardened level.
	LevelRestricted = "restricted"
)

// levels are the Pod Security levels, loosest first.
var levels = []string{LevelPrivileged, LevelBaseline, LevelRestricted}

// BaselineCapabilities are the capabilities the Pod Security "baseline" level lets a
// container add.
func BaselineCapabilities() []string {
	return []string{
		"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
		"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
	}
}

// DefaultMaxWorkerGroups is far above any real RayService and keeps the guard's evaluation of
// the largest one it accepts well within the API server's CEL cost budget.
const DefaultMaxWorkerGroups = 1000

// Config is what the member allows the hub to ask for. The zero value of a toggle is the
// stricter choice.
type Config struct {
	// HubUsernames are the usernames the guard applies to (request.userInfo.username); every
	// other user, the member's admins included, passes untouched.
	HubUsernames []string
	// AllowedServiceAccounts are the ServiceAccounts a Pod template may run as; an empty
	// serviceAccountName counts as "default".
	AllowedServiceAccounts []string
	// AllowedNamespaces are the namespaces the hub may create and write RayServices and
	// traffic objects in; empty means any.
	AllowedNamespaces []string
	// AllowedExistingNamespaces are namespaces the hub did not create where it may write
	// RayServices and traffic objects without their carrying labels.HubNamespace; elsewhere it
	// writes only where that label says "created" or "allowed".
	AllowedExistingNamespaces []string
	// AllowedCapabilities are the capabilities a container may add.
	AllowedCapabilities []string
	// AllowHostNetwork lets Pod templates use hostNetwork and hostPorts (never hostPID or
	// hostIPC).
	AllowHostNetwork bool
	// AllowNodePorts lets the RayService's Services be of type NodePort or LoadBalancer and
	// ask for nodePorts (never externalIPs).
	AllowNodePorts bool
	// AllowIngress lets the RayService's head ask KubeRay for an Ingress (enableIngress).
	AllowIngress bool
	// AllowedGatewayClasses are the GatewayClasses an incremental upgrade may name, each a
	// Gateway the spoke creates; empty allows none.
	AllowedGatewayClasses []string
	// MinPodSecurityLevel is the member's Pod Security level: the guard holds the hub's Pod
	// templates to its checks (at privileged, only to the rules with a setting of their own
	// above), refuses RayServices in namespaces enforcing less, and refuses Namespaces the hub
	// labels with less.
	MinPodSecurityLevel string
	// UnenforcedNamespaces are the namespaces where the hub may write RayServices although
	// their pod-security.kubernetes.io/enforce label is missing or looser than
	// MinPodSecurityLevel; the guard still checks the Pod templates.
	UnenforcedNamespaces []string
	// MaxWorkerGroups bounds the worker groups of a RayService the hub writes.
	MaxWorkerGroups int
	// TrafficNamespaces are the namespaces where the member's admin granted the hub its
	// traffic Roles by name (the spoke chart's hubTraffic.namespaces, `rayfleet join
	// --traffic-namespace`): the hub may write its HTTPRoutes, Services and EndpointSlices there
	// whether or not it created them. Elsewhere it writes them only where it may write
	// RayServices (AllowedNamespaces, and labels.HubNamespace or AllowedExistingNamespaces).
	TrafficNamespaces []string
}

// HubUsername is the username a ServiceAccount authenticates as.
func HubUsername(namespace, serviceAccount string) string {
	return "system:serviceaccount:" + namespace + ":" + serviceAccount
}

// Default is the Pod Security "baseline" level for the hub's identity in its default
// namespace: every baseline check, only the "default" ServiceAccount, any namespace that
// enforces baseline or stricter, baseline's capabilities, no host networking, no node ports, no
// Ingress, no GatewayClass, no Namespace looser than baseline.
func Default() Config {
	return Config{
		HubUsernames:           []string{HubUsername(hubaccess.DefaultNamespace, hubaccess.ServiceAccountName)},
		AllowedServiceAccounts: []string{"default"},
		AllowedCapabilities:    BaselineCapabilities(),
		MinPodSecurityLevel:    LevelBaseline,
		MaxWorkerGroups:        DefaultMaxWorkerGroups,
	}
}

// Validate reports what makes c unusable: without a hub username the guard would apply to
// nobody, and an unknown level would refuse every labelled Namespace.
func (c Config) Validate() error {
	var errs []error
	if len(c.HubUsernames) == 0 {
		errs = append(errs, errors.New("no hub username: the guard would apply to nobody"))
	}
	for _, l := range []struct {
		field string
		list  []string
	}{
		{"hub usernames", c.HubUsernames}, {"allowed ServiceAccounts", c.AllowedServiceAccounts},
		{"allowed namespaces", c.AllowedNamespaces}, {"allowed existing namespaces", c.AllowedExistingNamespaces},
		{"allowed capabilities", c.AllowedCapabilities},
		{"unenforced namespaces", c.UnenforcedNamespaces}, {"allowed GatewayClasses", c.AllowedGatewayClasses},
		{"traffic namespaces", c.TrafficNamespaces},
	} {
		if slices.Contains(l.list, "") {
			errs = append(errs, fmt.Errorf("an empty string among the %s", l.field))
		}
	}
	if !slices.Contains(levels, c.MinPodSecurityLevel) {
		errs = append(errs, fmt.Errorf("minimum Pod Security level %q is none of %v", c.MinPodSecurityLevel, levels))
	}
	if c.MaxWorkerGroups < 1 {
		errs = append(errs, fmt.Errorf("maximum worker groups %d is not positive", c.MaxWorkerGroups))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("hub policy: %w", err)
	}
	return nil
}
