package hubpolicy

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// TrafficSuffix names the policy on the hub's traffic objects on a member that is a traffic
// cluster (a PlacementPolicy's spec.traffic.cluster): HTTPRoutes, Services and EndpointSlices.
const TrafficSuffix = "-traffic"

// trafficKind selects the traffic policy's settings.
const trafficKind = "traffic"

// VarTrafficNamespaces holds Config.TrafficNamespaces, a list of strings.
const VarTrafficNamespaces = "trafficNamespaces"

// trafficResources are the resources the hub writes for a RayService's route, by API group:
// what shared/hubaccess.TrafficRules grants it. The hub writes Services and EndpointSlices on a
// member for nothing else.
func trafficResources() []admissionregistrationv1.NamedRuleWithOperations {
	rule := func(group, resource string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: operations(),
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
		}}
	}
	return []admissionregistrationv1.NamedRuleWithOperations{
		rule(gwv1.GroupName, "httproutes"),
		rule(corev1.GroupName, "services"),
		rule(discoveryv1.GroupName, "endpointslices"),
	}
}

// trafficSettings are the traffic policy's settings variables.
func trafficSettings(c Config) []admissionregistrationv1.Variable {
	return []admissionregistrationv1.Variable{
		{Name: VarAllowedNamespaces, Expression: literal(nonNil(c.AllowedNamespaces))},
		{Name: VarAllowedExistingNamespaces, Expression: literal(nonNil(c.AllowedExistingNamespaces))},
		{Name: VarTrafficNamespaces, Expression: literal(nonNil(c.TrafficNamespaces))},
	}
}

// trafficVariables are the traffic policy's variables after the settings. Its expressions read
// only what every kind it matches has (request, metadata, the namespace), so that they type
// check against each.
func trafficVariables() []admissionregistrationv1.Variable {
	return []admissionregistrationv1.Variable{
		{Name: "namespaceOwner", Expression: fmt.Sprintf(
			"namespaceObject != null && has(namespaceObject.metadata.labels) && '%[1]s' in namespaceObject.metadata.labels ? namespaceObject.metadata.labels['%[1]s'] : ''",
			labels.HubNamespace)},
		{Name: "named", Expression: "request.namespace in variables." + VarTrafficNamespaces},
	}
}

// trafficObject is the CEL string naming the object at the start of a refusal.
const trafficObject = `request.kind.kind + ' "' + object.metadata.name + '" in namespace "' + request.namespace + '"'`

// trafficValidations hold the hub's routes and backends to the namespaces it may write
// RayServices in (RuleNamespace, RuleNamespaceOwner), or that the member's admin named for its
// traffic: a route elsewhere could attach to a Gateway of a namespace the member keeps for
// something else, and a Service there could stand in front of what that namespace serves.
func trafficValidations() []admissionregistrationv1.Validation {
	return []admissionregistrationv1.Validation{
		validation(RuleNamespace, fmt.Sprintf("variables.named || size(variables.%[1]s) == 0 || request.namespace in variables.%[1]s", VarAllowedNamespaces),
			trafficObject+" + ', where the hub may not write'"),
		validation(RuleNamespaceOwner, fmt.Sprintf("variables.named || variables.namespaceOwner in ['%s', '%s'] || request.namespace in variables.%s",
			labels.HubNamespaceCreated, labels.HubNamespaceAllowed, VarAllowedExistingNamespaces),
			trafficObject+fmt.Sprintf(` + ', which the hub did not create and this member has not allowed it into `+
				`(the member\'s admin labels the namespace %s=%s, or lists it in hubPolicy.%s or hubTraffic.namespaces)'`,
				labels.HubNamespace, labels.HubNamespaceAllowed, VarAllowedExistingNamespaces)),
	}
}
