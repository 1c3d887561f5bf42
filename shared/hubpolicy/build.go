package hubpolicy

import (
	"errors"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Suffixes of the policies (and their bindings) after the guard's name: one per kind of object
// the hub writes on a member (and TrafficSuffix for its routes and backends). Several policies
// rather than one, because the API server type checks each expression against every kind its
// policy matches, and the RayService rules do not type check against a Namespace.
const (
	// RayServicesSuffix names the policy on ray.io RayServices.
	RayServicesSuffix = "-rayservices"
	// NamespacesSuffix names the policy on Namespaces.
	NamespacesSuffix = "-namespaces"
)

// namespacesKind and rayServicesKind select a policy's settings.
const (
	namespacesKind  = "namespaces"
	rayServicesKind = "rayservices"
)

// Objects are the guard: its policies and, in the same order, their bindings.
type Objects struct {
	// Policies are the ValidatingAdmissionPolicies, RayServices' first.
	Policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	// Bindings bind each policy, named like it, with the Deny action.
	Bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// List is the objects in the order to create them: a binding of a missing policy is ignored
// by the API server, so policies go first (and, to remove the guard, bindings first).
func (o Objects) List() []client.Object {
	out := make([]client.Object, 0, len(o.Policies)+len(o.Bindings))
	for _, p := range o.Policies {
		out = append(out, p)
	}
	for _, b := range o.Bindings {
		out = append(out, b)
	}
	return out
}

// Build returns the guard for c, its objects named name plus RayServicesSuffix,
// NamespacesSuffix and TrafficSuffix. They carry no labels: the chart and join add their own.
func Build(name string, c Config) (Objects, error) {
	if name == "" {
		return Objects{}, errors.New("hub policy: no name")
	}
	if err := c.Validate(); err != nil {
		return Objects{}, err
	}
	rayServices := policy(name+RayServicesSuffix, c, []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: operations(),
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{rayv1.GroupVersion.Group}, APIVersions: []string{rayv1.GroupVersion.Version},
			Resources: []string{rayServicesKind},
		},
	}}}, append(settings(c, rayServicesKind), rayServiceVariables()...), rayServiceValidations())
	namespaces := policy(name+NamespacesSuffix, c, []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: operations(),
		Rule: admissionregistrationv1.Rule{
			APIGroups: []string{corev1.GroupName}, APIVersions: []string{corev1.SchemeGroupVersion.Version},
			Resources: []string{namespacesKind},
		},
	}}}, append(settings(c, namespacesKind), namespaceVariables()...), namespaceValidations())
	traffic := policy(name+TrafficSuffix, c, trafficResources(), append(trafficSettings(c), trafficVariables()...), trafficValidations())
	o := Objects{Policies: []*admissionregistrationv1.ValidatingAdmissionPolicy{rayServices, namespaces, traffic}}
	for _, p := range o.Policies {
		o.Bindings = append(o.Bindings, binding(p.Name))
	}
	return o, nil
}

// operations are what the guard looks at: the writes that carry a whole object. Deletes
// cannot run anything.
func operations() []admissionregistrationv1.OperationType {
	return []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
}

// policy is one ValidatingAdmissionPolicy for the requests of c.HubUsernames matching rules.
// It fails closed: a request the API server cannot evaluate (a CEL budget spent) is refused.
func policy(name string, c Config, rules []admissionregistrationv1.NamedRuleWithOperations,
	variables []admissionregistrationv1.Variable, validations []admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	fail := admissionregistrationv1.Fail
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: rules,
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{Name: HubMatchCondition, Expression: HubMatchExpression(c.HubUsernames)},
			},
			Variables:   variables,
			Validations: validations,
		},
	}
}

// binding binds the policy named name everywhere, denying what it refuses.
func binding(name string) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}
