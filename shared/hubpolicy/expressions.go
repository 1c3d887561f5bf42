package hubpolicy

import (
	"encoding/json"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// Names of the CEL variables that hold Config's settings. They come first in the policies, as
// literals, so that the spoke chart can set them from its values without knowing the rules.
const (
	// VarAllowedServiceAccounts holds Config.AllowedServiceAccounts, a list of strings.
	VarAllowedServiceAccounts = "allowedServiceAccounts"
	// VarAllowedNamespaces holds Config.AllowedNamespaces, a list of strings.
	VarAllowedNamespaces = "allowedNamespaces"
	// VarAllowedCapabilities holds Config.AllowedCapabilities, a list of strings.
	VarAllowedCapabilities = "allowedCapabilities"
	// VarAllowHostNetwork holds Config.AllowHostNetwork, a bool.
	VarAllowHostNetwork = "allowHostNetwork"
	// VarAllowNodePorts holds Config.AllowNodePorts, a bool.
	VarAllowNodePorts = "allowNodePorts"
	// VarMinPodSecurityLevel holds Config.MinPodSecurityLevel, a string.
	VarMinPodSecurityLevel = "minPodSecurityLevel"
	// VarMaxWorkerGroups holds Config.MaxWorkerGroups, an int.
	VarMaxWorkerGroups = "maxWorkerGroups"
	// VarUnenforcedNamespaces holds Config.UnenforcedNamespaces, a list of strings.
	VarUnenforcedNamespaces = "unenforcedNamespaces"
	// VarAllowIngress holds Config.AllowIngress, a bool.
	VarAllowIngress = "allowIngress"
	// VarAllowedGatewayClasses holds Config.AllowedGatewayClasses, a list of strings.
	VarAllowedGatewayClasses = "allowedGatewayClasses"
	// VarAllowedExistingNamespaces holds Config.AllowedExistingNamespaces, a list of strings.
	VarAllowedExistingNamespaces = "allowedExistingNamespaces"
)

// HubMatchCondition names the match condition that limits the guard to Config.HubUsernames;
// its expression is HubMatchExpression.
const HubMatchCondition = "hub-identity"

// HubMatchExpression is the CEL expression of HubMatchCondition for usernames. It matches on
// the authenticated username, which the hub cannot choose, rather than on anything in the
// object, which it can.
func HubMatchExpression(usernames []string) string {
	return "request.userInfo.username in " + literal(usernames)
}

// literal is v as a CEL literal. JSON's strings, numbers, booleans and lists are CEL's too,
// and Helm's toJson writes the same text, so the chart and Build agree byte for byte.
func literal(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		// Only strings, string lists, ints and bools reach here.
		panic(fmt.Sprintf("hubpolicy: %v is no CEL literal: %v", v, err))
	}
	return string(data)
}

// settings are Config's CEL variables for a policy of kind, in a fixed order.
func settings(c Config, kind string) []admissionregistrationv1.Variable {
	if c.AllowedNamespaces == nil {
		c.AllowedNamespaces = []string{}
	}
	if kind == namespacesKind {
		return []admissionregistrationv1.Variable{
			{Name: VarAllowedNamespaces, Expression: literal(c.AllowedNamespaces)},
			{Name: VarMinPodSecurityLevel, Expression: literal(c.MinPodSecurityLevel)},
		}
	}
	return []admissionregistrationv1.Variable{
		{Name: VarAllowedServiceAccounts, Expression: literal(nonNil(c.AllowedServiceAccounts))},
		{Name: VarAllowedNamespaces, Expression: literal(c.AllowedNamespaces)},
		{Name: VarAllowedCapabilities, Expression: literal(nonNil(c.AllowedCapabilities))},
		{Name: VarAllowHostNetwork, Expression: literal(c.AllowHostNetwork)},
		{Name: VarAllowNodePorts, Expression: literal(c.AllowNodePorts)},
		{Name: VarMaxWorkerGroups, Expression: literal(c.MaxWorkerGroups)},
		{Name: VarMinPodSecurityLevel, Expression: literal(c.MinPodSecurityLevel)},
		{Name: VarUnenforcedNamespaces, Expression: literal(nonNil(c.UnenforcedNamespaces))},
		{Name: VarAllowIngress, Expression: literal(c.AllowIngress)},
		{Name: VarAllowedGatewayClasses, Expression: literal(nonNil(c.AllowedGatewayClasses))},
		{Name: VarAllowedExistingNamespaces, Expression: literal(nonNil(c.AllowedExistingNamespaces))},
	}
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// The CEL below is written for Kubernetes 1.30 (ValidatingAdmissionPolicy's first GA release):
// no two-variable comprehensions, no flatten. Aggregate literals must be homogeneous there, so
// every rule collects its refusals as a list of strings (one per offending Pod template or
// Service) and the message names the first. Optional fields are tested with has(), so a plain
// RayService passes; a comprehension over a missing list is over [].

// rayServiceVariables are the RayService policy's variables after the settings: the parts of
// the RayService the rules read, then one list of refusals per rule.
func rayServiceVariables() []admissionregistrationv1.Variable {
	const cluster = "object.spec.rayClusterConfig"
	vs := []admissionregistrationv1.Variable{
		{Name: "head", Expression: cluster + ".headGroupSpec"},
		{Name: "workers", Expression: fmt.Sprintf("has(%[1]s.workerGroupSpecs) ? %[1]s.workerGroupSpecs : []", cluster)},
		{Name: "autoscaler", Expression: fmt.Sprintf(
			"has(%[1]s.autoscalerOptions) && has(%[1]s.autoscalerOptions.securityContext) ? [%[1]s.autoscalerOptions.securityContext] : []", cluster)},
		// Without its own securityContext the sidecar takes the Ray container's restrictions
		// (seccomp, non-root, no privilege escalation, drop ALL), never its privileges.
		{Name: "autoscalerInherited", Expression: fmt.Sprintf(
			"has(%[1]s.autoscalerOptions) && has(%[1]s.autoscalerOptions.securityContext) ? [] : "+
				"(size(%[1]s.headGroupSpec.template.spec.containers) > 0 && has(%[1]s.headGroupSpec.template.spec.containers[0].securityContext) ? "+
				"[%[1]s.headGroupSpec.template.spec.containers[0].securityContext] : [])", cluster)},
		{Name: "autoscaling", Expression: fmt.Sprintf("has(%[1]s.enableInTreeAutoscaling) && %[1]s.enableInTreeAutoscaling", cluster)},
		{Name: "baseline", Expression: fmt.Sprintf("variables.%s in ['%s', '%s']", VarMinPodSecurityLevel, LevelBaseline, LevelRestricted)},
		{Name: "restricted", Expression: fmt.Sprintf("variables.%s == '%s'", VarMinPodSecurityLevel, LevelRestricted)},
		{Name: "tooManyWorkerGroups", Expression: "size(variables.workers) > variables." + VarMaxWorkerGroups},
	}
	vs = append(vs, namespaceLabelVariables()...)
	vs = append(vs, []admissionregistrationv1.Variable{
		{Name: RuleServiceAccount, Expression: perTemplate(serviceAccountRefusals)},
		{Name: RulePrivileged, Expression: perTemplate(func(spec, where string) string {
			return containerRefusals(spec, where, present("c", "securityContext", "privileged")+" && c.securityContext.privileged", "' asks for privileged'")
		}) + " + " + autoscalerRefusal(present("s", "privileged")+" && s.privileged", "' asks for privileged'")},
		{Name: RuleCapabilities, Expression: perTemplate(func(spec, where string) string {
			return containerRefusals(spec, where, addsCapabilities("c", "securityContext"), "' adds capabilities ' + "+addedCapabilities("c.securityContext"))
		}) + " + " + autoscalerRefusal(addsCapabilities("s"), "' adds capabilities ' + "+addedCapabilities("s"))},
		{Name: RuleHostNamespaces, Expression: perTemplate(hostNamespaceRefusals)},
		{Name: RuleHostPorts, Expression: fmt.Sprintf("variables.%s ? [] : %s", VarAllowHostNetwork, perTemplate(func(spec, where string) string {
			const hostPort = "has(p.hostPort) && p.hostPort != 0"
			return containerRefusals(spec, where, "has(c.ports) && c.ports.exists(p, "+hostPort+")",
				"' asks for hostPort ' + c.ports.filter(p, "+hostPort+").map(p, string(p.hostPort)).join(', ')")
		}))},
		{Name: RuleHostPath, Expression: perTemplate(func(spec, where string) string {
			return fmt.Sprintf(`(has(%[1]s.volumes) ? %[1]s.volumes : []).filter(v, has(v.hostPath)).map(v, 'volume "' + v.name + '" in ' + %[2]s + ' is a hostPath (' + v.hostPath.path + ')')`, spec, where)
		})},
	}...)
	vs = append(vs, podCheckVariables()...)
	return append(vs, []admissionregistrationv1.Variable{
		{Name: RuleExternalIPs, Expression: perService(func(svc, where string) string {
			return fmt.Sprintf("(has(%[1]s.spec.externalIPs) && size(%[1]s.spec.externalIPs) > 0 ? [%[2]s + ' asks for externalIPs ' + %[1]s.spec.externalIPs.join(', ')] : [])", svc, where)
		})},
		{Name: RuleNodePorts, Expression: fmt.Sprintf("variables.%s ? [] : %s + %s", VarAllowNodePorts, perService(nodePortRefusals),
			"(has(variables.head.serviceType) && variables.head.serviceType in ['NodePort', 'LoadBalancer'] ? ['headGroupSpec.serviceType is ' + variables.head.serviceType] : [])")},
		{Name: RuleIngress, Expression: ingressRefusals()},
		{Name: RuleGatewayClass, Expression: gatewayClassRefusals()},
	}...)
}

// rayServiceName is the CEL string naming the RayService at the start of a refusal.
const rayServiceName = `'RayService "' + object.metadata.name + '"'`

// ingressRefusals refuses headGroupSpec.enableIngress unless the member allows it: the Ingress
// KubeRay creates takes its class and annotations from the head, which the hub writes.
func ingressRefusals() string {
	return fmt.Sprintf("!variables.%[1]s && has(variables.head.enableIngress) && variables.head.enableIngress ? "+
		"[%[2]s + ' sets headGroupSpec.enableIngress, which this member does not allow (hubPolicy.%[1]s)'] : []", VarAllowIngress, rayServiceName)
}

// gatewayClassRefusals refuses an incremental upgrade's gatewayClassName outside the allowed
// ones, whatever the upgrade type: the name is what decides which Gateway the spoke creates. An
// empty name is no class (KubeRay refuses such an upgrade and creates no Gateway).
func gatewayClassRefusals() string {
	const opts = "object.spec.upgradeStrategy.clusterUpgradeOptions"
	return fmt.Sprintf("%[1]s && %[2]s.gatewayClassName != '' && !(%[2]s.gatewayClassName in variables.%[3]s) ? "+
		"[%[4]s + ' sets spec.upgradeStrategy.clusterUpgradeOptions.gatewayClassName \"' + %[2]s.gatewayClassName + "+
		"'\", a GatewayClass this member does not allow (hubPolicy.%[3]s)'] : []",
		present("object.spec", "upgradeStrategy", "clusterUpgradeOptions", "gatewayClassName"), opts, VarAllowedGatewayClasses, rayServiceName)
}

// rayServiceValidations are the RayService policy's validations, in Rules' order. Each rule
// but the first passes a RayService with too many worker groups, which the first refuses, so
// that such a RayService costs next to nothing to evaluate.
func rayServiceValidations() []admissionregistrationv1.Validation {
	vs := []admissionregistrationv1.Validation{
		validation(RuleWorkerGroups, "!variables.tooManyWorkerGroups",
			"'RayService \"' + object.metadata.name + '\" has ' + string(size(variables.workers)) + ' worker groups, more than the ' + string(variables."+VarMaxWorkerGroups+") + ' the hub may write'"),
		validation(RuleNamespace, fmt.Sprintf("size(variables.%[1]s) == 0 || request.namespace in variables.%[1]s", VarAllowedNamespaces),
			"'RayService \"' + object.metadata.name + '\" in namespace \"' + request.namespace + '\", where the hub may not write'"),
	}
	for _, rule := range Rules() {
		switch rule {
		case RuleWorkerGroups, RuleNamespace, RulePodSecurityLabels:
		case RuleNamespaceLevel:
			vs = append(vs, namespaceLevelValidation())
		case RuleNamespaceOwner:
			vs = append(vs, namespaceOwnerValidation())
		default:
			vs = append(vs, listValidation(rule, "variables.tooManyWorkerGroups || "))
		}
	}
	return vs
}

// Pod Security admission's labels on a namespace.
const (
	enforceLabel        = "pod-security.kubernetes.io/enforce"
	enforceVersionLabel = "pod-security.kubernetes.io/enforce-version"
)

// namespaceLabelVariables are the enforce labels of the RayService's namespace as the API
// server has it (namespaceObject), "" when missing.
func namespaceLabelVariables() []admissionregistrationv1.Variable {
	label := func(key string) string {
		return fmt.Sprintf("namespaceObject != null && has(namespaceObject.metadata.labels) && '%[1]s' in namespaceObject.metadata.labels ? namespaceObject.metadata.labels['%[1]s'] : ''", key)
	}
	return []admissionregistrationv1.Variable{
		{Name: "namespaceEnforce", Expression: label(enforceLabel)},
		{Name: "namespaceEnforceVersion", Expression: label(enforceVersionLabel)},
		{Name: "namespaceOwner", Expression: label(labels.HubNamespace)},
	}
}

// namespaceOwnerValidation refuses a RayService in a namespace the hub neither created nor was
// allowed into: an existing namespace is the member's, and what the hub writes there (Pods
// mounting its Secrets, running as its ServiceAccounts) reaches what the member keeps there.
func namespaceOwnerValidation() admissionregistrationv1.Validation {
	ok := fmt.Sprintf("variables.namespaceOwner in ['%s', '%s'] || request.namespace in variables.%s",
		labels.HubNamespaceCreated, labels.HubNamespaceAllowed, VarAllowedExistingNamespaces)
	return validation(RuleNamespaceOwner, "variables.tooManyWorkerGroups || "+ok, fmt.Sprintf(
		`'RayService "' + object.metadata.name + '" in namespace "' + request.namespace + '", which the hub did not create and this member has not allowed it into `+
			`(the member\'s admin labels the namespace %s=%s, or lists it in hubPolicy.%s)'`,
		labels.HubNamespace, labels.HubNamespaceAllowed, VarAllowedExistingNamespaces))
}

// namespaceLevelValidation refuses a RayService in a namespace whose enforce label is missing
// or looser than the member's level, or whose enforce-version is pinned (an older version
// checks less; the Namespace policy lets the hub set only latest), unless the namespace is
// among the unenforced ones. A missing label counts as looser than baseline: Pod Security
// admission then enforces nothing unless the cluster's own defaults say otherwise, which the
// guard cannot see.
func namespaceLevelValidation() admissionregistrationv1.Validation {
	rank := func(v string) string {
		return fmt.Sprintf("(%[1]s in %[2]s ? %[2]s[%[1]s] : -1)", v, "{"+levelMap()+"}")
	}
	looser := fmt.Sprintf("%s < %s", rank("variables.namespaceEnforce"), rank("variables."+VarMinPodSecurityLevel))
	ok := fmt.Sprintf("variables.%s == '%s' || request.namespace in variables.%s || !(%s) && variables.namespaceEnforceVersion in ['', 'latest']",
		VarMinPodSecurityLevel, LevelPrivileged, VarUnenforcedNamespaces, looser)
	return validation(RuleNamespaceLevel, "variables.tooManyWorkerGroups || "+ok, fmt.Sprintf(
		`'RayService "' + object.metadata.name + '" in namespace "' + request.namespace + '", ' + (%[1]s ? `+
			`'which enforces ' + (variables.namespaceEnforce != '' ? '%[2]s=' + variables.namespaceEnforce : 'no %[2]s') + ', looser than ' + variables.%[3]s : `+
			`'whose %[4]s is ' + variables.namespaceEnforceVersion + ' (only latest)')`,
		looser, enforceLabel, VarMinPodSecurityLevel, enforceVersionLabel))
}

// namespaceVariables are the Namespace policy's variables after the settings: the enforce
// labels before and after the request, and the refusals of RulePodSecurityLabels.
func namespaceVariables() []admissionregistrationv1.Variable {
	label := func(obj, key string) string {
		return fmt.Sprintf("has(%[1]s.metadata.labels) && '%[2]s' in %[1]s.metadata.labels ? %[1]s.metadata.labels['%[2]s'] : ''", obj, key)
	}
	const (
		enforce        = "pod-security.kubernetes.io/enforce"
		enforceVersion = "pod-security.kubernetes.io/enforce-version"
		ns             = "'namespace \"' + object.metadata.name + '\"'"
	)
	// A level outside levels (a typo) counts as looser than any; Pod Security admission
	// itself treats it as privileged.
	rank := func(v string) string {
		return fmt.Sprintf("(%[1]s in variables.levels ? variables.levels[%[1]s] : -1)", v)
	}
	refusals := strings.Join([]string{
		fmt.Sprintf("(variables.enforce != '' && %s < %s ? [%s + ' sets %s=' + variables.enforce + ', looser than ' + variables.%s] : [])",
			rank("variables.enforce"), rank("variables."+VarMinPodSecurityLevel), ns, enforce, VarMinPodSecurityLevel),
		fmt.Sprintf("(variables.oldEnforce != '' && variables.enforce == '' ? [%s + ' removes %s=' + variables.oldEnforce] : [])", ns, enforce),
		fmt.Sprintf("(variables.oldEnforce != '' && variables.enforce != '' && %s < %s ? [%s + ' lowers %s from ' + variables.oldEnforce + ' to ' + variables.enforce] : [])",
			rank("variables.enforce"), rank("variables.oldEnforce"), ns, enforce),
		fmt.Sprintf("(variables.enforceVersion != '' && variables.enforceVersion != 'latest' && variables.enforceVersion != variables.oldEnforceVersion ? [%s + ' pins %s=' + variables.enforceVersion + ' (only latest)'] : [])",
			ns, enforceVersion),
		// The hub patches namespaces it created to label them for Pod Security; any other label
		// it changed could select the namespace into a NetworkPolicy or a Gateway's allowedRoutes.
		fmt.Sprintf("(size(variables.otherLabelsChanged) > 0 ? [%s + ' changes labels ' + variables.otherLabelsChanged.join(', ') + ', where the hub may change only pod-security.kubernetes.io/ labels'] : [])", ns),
	}, " + ")
	const psa = "'pod-security.kubernetes.io/'"
	newLabels := "(has(object.metadata.labels) ? object.metadata.labels : {})"
	oldLabels := "(oldObject != null && has(oldObject.metadata.labels) ? oldObject.metadata.labels : {})"
	otherChanged := fmt.Sprintf("oldObject == null ? [] : %[1]s.filter(k, !k.startsWith(%[3]s) && (!(k in %[2]s) || %[2]s[k] != %[1]s[k])) + "+
		"%[2]s.filter(k, !k.startsWith(%[3]s) && !(k in %[1]s))", newLabels, oldLabels, psa)
	return []admissionregistrationv1.Variable{
		{Name: "levels", Expression: fmt.Sprintf("{%s}", levelMap())},
		{Name: "enforce", Expression: label("object", enforce)},
		{Name: "oldEnforce", Expression: "oldObject != null && " + label("oldObject", enforce)},
		{Name: "enforceVersion", Expression: label("object", enforceVersion)},
		{Name: "oldEnforceVersion", Expression: "oldObject != null && " + label("oldObject", enforceVersion)},
		{Name: "otherLabelsChanged", Expression: otherChanged},
		{Name: "owner", Expression: label("object", labels.HubNamespace)},
		{Name: "oldOwner", Expression: "oldObject != null && " + label("oldObject", labels.HubNamespace)},
		{Name: RuleNamespaceOwner, Expression: ownerLabelRefusals(ns)},
		{Name: RulePodSecurityLabels, Expression: refusals},
	}
}

// ownerLabelRefusals is the CEL list of refusals of labels.HubNamespace on a Namespace (named
// by the CEL string ns): the hub sets it only when it creates the namespace and only to
// "created", so that it cannot adopt a namespace that exists.
func ownerLabelRefusals(ns string) string {
	return fmt.Sprintf("(oldObject == null && variables.owner != '' && variables.owner != '%[1]s' ? "+
		"[%[2]s + ' sets %[3]s=' + variables.owner + ', where the hub may set only %[1]s, on creating it'] : []) + "+
		"(oldObject != null && variables.owner != variables.oldOwner ? "+
		"[%[2]s + ' changes %[3]s from \"' + variables.oldOwner + '\" to \"' + variables.owner + '\", which only the member\\'s admin may'] : [])",
		labels.HubNamespaceCreated, ns, labels.HubNamespace)
}

// namespaceValidations are the Namespace policy's validations, in Rules' order.
func namespaceValidations() []admissionregistrationv1.Validation {
	return []admissionregistrationv1.Validation{
		validation(RuleNamespace, fmt.Sprintf("size(variables.%[1]s) == 0 || object.metadata.name in variables.%[1]s", VarAllowedNamespaces),
			"'namespace \"' + object.metadata.name + '\", where the hub may not write'"),
		listValidation(RuleNamespaceOwner, ""),
		listValidation(RulePodSecurityLabels, ""),
	}
}

// levelMap is the body of the CEL map from Pod Security level to its strictness.
func levelMap() string {
	entries := make([]string, len(levels))
	for i, l := range levels {
		entries[i] = fmt.Sprintf("'%s': %d", l, i)
	}
	return strings.Join(entries, ", ")
}

// validation refuses, as Forbidden, a request for which expression is false, with the message
// "hubPolicy/<rule>: " followed by the CEL string detail.
func validation(rule, expression, detail string) admissionregistrationv1.Validation {
	reason := metav1.StatusReasonForbidden
	return admissionregistrationv1.Validation{
		Expression:        expression,
		MessageExpression: fmt.Sprintf("'%s' + %s", messagePrefix(rule), detail),
		// The static message stands in when the messageExpression fails (a budget spent).
		Message: messagePrefix(rule) + "refused for the hub's identity on this member",
		Reason:  &reason,
	}
}

// listValidation refuses a request whose list of refusals for rule (the variable named rule)
// is not empty, naming the first and counting the others; unless says when not to look.
func listValidation(rule, unless string) admissionregistrationv1.Validation {
	v := "variables." + rule
	return validation(rule, fmt.Sprintf("%ssize(%s) == 0", unless, v),
		fmt.Sprintf("%[1]s[0] + (size(%[1]s) > 1 ? ' (and ' + string(size(%[1]s) - 1) + ' more)' : '')", v))
}

// perTemplate is the CEL list of refusals over the RayService's Pod templates, head first:
// refusals(spec, where) is a CEL list of strings about the PodSpec expression spec, named by
// the CEL string where. Each template contributes its first refusal.
func perTemplate(refusals func(spec, where string) string) string {
	const head = "variables.head.template.spec"
	return fmt.Sprintf("[has(%[1]s) ? %[2]s : []].filter(l, size(l) > 0).map(l, l[0]) + "+
		"variables.workers.map(g, has(g.template.spec) ? %[3]s : []).filter(l, size(l) > 0).map(l, l[0])",
		head, refusals(head, "'headGroupSpec'"), refusals("g.template.spec", `'worker group "' + g.groupName + '"'`))
}

// perService is the CEL list of refusals over the RayService's Services (serveService, then
// the head Service): refusals(svc, where) is a CEL list of strings about the Service
// expression svc, whose spec is present, named by the CEL string where.
func perService(refusals func(svc, where string) string) string {
	var parts []string
	for _, s := range []struct{ parent, field, where string }{
		{"object.spec", "serveService", "'spec.serveService'"},
		{"variables.head", "headService", "'headGroupSpec.headService'"},
	} {
		svc := s.parent + "." + s.field
		parts = append(parts, fmt.Sprintf("(has(%[1]s) && has(%[2]s.spec) ? %[3]s : [])", s.parent+"."+s.field, svc, refusals(svc, s.where)))
	}
	return strings.Join(parts, " + ")
}

// containerRefusals is the CEL list of refusals over the containers and init containers of
// the PodSpec expression spec (named by where) for which pred holds; what (CEL string) says
// what is refused. Both pred and what read the container as c.
func containerRefusals(spec, where, pred, what string) string {
	one := func(list, kind string) string {
		return fmt.Sprintf(`%s.filter(c, %s).map(c, '%s "' + c.name + '" in ' + %s + %s)`, list, pred, kind, where, what)
	}
	return one(spec+".containers", "container") + " + " +
		one(fmt.Sprintf("(has(%[1]s.initContainers) ? %[1]s.initContainers : [])", spec), "init container") + " + " +
		one(fmt.Sprintf("(has(%[1]s.ephemeralContainers) ? %[1]s.ephemeralContainers : [])", spec), "ephemeral container")
}

// autoscalerRefusal is the CEL list of the refusal of the autoscaler's securityContext (read
// as s) when pred holds; what (CEL string) says what is refused.
func autoscalerRefusal(pred, what string) string {
	return fmt.Sprintf("variables.autoscaler.filter(s, %s).map(s, 'the autoscaler (rayClusterConfig.autoscalerOptions)' + %s)", pred, what)
}

// addsCapabilities is the CEL condition that the securityContext at path below base adds a
// capability outside the allowed ones.
func addsCapabilities(base string, path ...string) string {
	sc := strings.Join(append([]string{base}, path...), ".")
	return present(base, append(path, "capabilities", "add")...) + " && " + sc + ".capabilities.add.exists(x, !(x in variables." + VarAllowedCapabilities + "))"
}

// addedCapabilities is the CEL string listing what sc adds outside the allowed capabilities.
func addedCapabilities(sc string) string {
	return sc + ".capabilities.add.filter(x, !(x in variables." + VarAllowedCapabilities + ")).join(', ')"
}

// serviceAccountRefusals refuses the PodSpec's effective ServiceAccount (serviceAccountName,
// else the deprecated serviceAccount, else "default") when it is not allowed.
func serviceAccountRefusals(spec, where string) string {
	effective := fmt.Sprintf("has(%[1]s.serviceAccountName) && %[1]s.serviceAccountName != '' ? %[1]s.serviceAccountName : "+
		"(has(%[1]s.serviceAccount) && %[1]s.serviceAccount != '' ? %[1]s.serviceAccount : 'default')", spec)
	return fmt.Sprintf(`[%s].filter(n, !(n in variables.%s)).map(n, %s + ' runs as ServiceAccount "' + n + '"')`, effective, VarAllowedServiceAccounts, where)
}

// hostNamespaceRefusals refuses hostNetwork (unless allowed), hostPID and hostIPC.
func hostNamespaceRefusals(spec, where string) string {
	parts := []string{fmt.Sprintf("(!variables.%s && has(%s.hostNetwork) && %[2]s.hostNetwork ? [%s + ' asks for hostNetwork'] : [])", VarAllowHostNetwork, spec, where)}
	for _, f := range []string{"hostPID", "hostIPC"} {
		parts = append(parts, fmt.Sprintf("(has(%[1]s.%[2]s) && %[1]s.%[2]s ? [%[3]s + ' asks for %[2]s'] : [])", spec, f, where))
	}
	return strings.Join(parts, " + ")
}

// nodePortRefusals refuses a Service of type NodePort or LoadBalancer, and explicit nodePorts.
func nodePortRefusals(svc, where string) string {
	const nodePort = "has(p.nodePort) && p.nodePort != 0"
	return fmt.Sprintf("(has(%[1]s.spec.type) && %[1]s.spec.type in ['NodePort', 'LoadBalancer'] ? [%[2]s + ' is of type ' + %[1]s.spec.type] : []) + "+
		"(has(%[1]s.spec.ports) && %[1]s.spec.ports.exists(p, %[3]s) ? [%[2]s + ' asks for nodePort ' + %[1]s.spec.ports.filter(p, %[3]s).map(p, string(p.nodePort)).join(', ')] : [])",
		svc, where, nodePort)
}

// present is the CEL condition that the field path below base is set: has() on each step.
func present(base string, path ...string) string {
	conds := make([]string, len(path))
	for i := range path {
		conds[i] = "has(" + base + "." + strings.Join(path[:i+1], ".") + ")"
	}
	return strings.Join(conds, " && ")
}

// messagePrefix starts every refusal of rule; ParseDenial looks for it.
func messagePrefix(rule string) string {
	return "hubPolicy/" + rule + ": "
}
