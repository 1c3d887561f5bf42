package hubpolicy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string
	}{
		{name: "default", edit: func(*Config) {}},
		{name: "no hub", edit: func(c *Config) { c.HubUsernames = nil }, wantErr: "no hub username"},
		{name: "empty namespace", edit: func(c *Config) { c.AllowedNamespaces = []string{"a", ""} }, wantErr: "an empty string among the allowed namespaces"},
		{name: "unknown level", edit: func(c *Config) { c.MinPodSecurityLevel = "strict" }, wantErr: `minimum Pod Security level "strict"`},
		{name: "no level", edit: func(c *Config) { c.MinPodSecurityLevel = "" }, wantErr: `minimum Pod Security level ""`},
		{name: "no worker groups", edit: func(c *Config) { c.MaxWorkerGroups = 0 }, wantErr: "maximum worker groups 0"},
		{name: "privileged namespaces allowed", edit: func(c *Config) { c.MinPodSecurityLevel = LevelPrivileged }},
		{name: "empty unenforced namespace", edit: func(c *Config) { c.UnenforcedNamespaces = []string{""} }, wantErr: "an empty string among the unenforced namespaces"},
		{name: "empty existing namespace", edit: func(c *Config) { c.AllowedExistingNamespaces = []string{""} }, wantErr: "an empty string among the allowed existing namespaces"},
		{name: "empty traffic namespace", edit: func(c *Config) { c.TrafficNamespaces = []string{"edge", ""} }, wantErr: "an empty string among the traffic namespaces"},
		{name: "empty GatewayClass", edit: func(c *Config) { c.AllowedGatewayClasses = []string{"istio", ""} }, wantErr: "an empty string among the allowed GatewayClasses"},
		{name: "ingress and GatewayClasses allowed", edit: func(c *Config) { c.AllowIngress = true; c.AllowedGatewayClasses = []string{"istio"} }},
		{name: "restricted", edit: func(c *Config) { c.MinPodSecurityLevel = LevelRestricted; c.UnenforcedNamespaces = []string{"legacy"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.edit(&c)
			err := c.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
			if _, buildErr := Build(DefaultName, c); (buildErr == nil) != (err == nil) {
				t.Errorf("Build() = %v, want Validate's %v", buildErr, err)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	c := Default()
	if want := []string{"system:serviceaccount:rayfleet-system:rayfleet-hub-access"}; !slices.Equal(c.HubUsernames, want) {
		t.Errorf("HubUsernames = %v, want %v", c.HubUsernames, want)
	}
	if len(c.AllowedCapabilities) != 13 || slices.Contains(c.AllowedCapabilities, "SYS_ADMIN") || slices.Contains(c.AllowedCapabilities, "NET_RAW") {
		t.Errorf("AllowedCapabilities = %v, want baseline's 13 (no NET_RAW)", c.AllowedCapabilities)
	}
	if c.AllowHostNetwork || c.AllowNodePorts || c.AllowIngress || len(c.AllowedGatewayClasses) != 0 || len(c.AllowedNamespaces) != 0 ||
		!slices.Equal(c.AllowedServiceAccounts, []string{"default"}) {
		t.Errorf("Default() = %+v, want no host network, no node ports, no Ingress, no GatewayClass, any namespace, the default ServiceAccount", c)
	}
}

// The guard applies to the hub's usernames only, fails closed, denies, and sets its settings
// from Config first.
func TestBuild(t *testing.T) {
	c := Default()
	c.HubUsernames = []string{"system:serviceaccount:a:hub", `odd"name`}
	c.AllowedNamespaces = []string{"team-a"}
	c.AllowHostNetwork = true
	c.MaxWorkerGroups = 7
	c.AllowIngress = true
	c.AllowedGatewayClasses = []string{"istio", "eg"}
	c.AllowedExistingNamespaces = []string{"argocd"}
	c.TrafficNamespaces = []string{"edge"}
	objs, err := Build("guard", c)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, obj := range objs.List() {
		names = append(names, fmt.Sprintf("%T/%s", obj, obj.GetName()))
	}
	wantNames := []string{
		"*v1.ValidatingAdmissionPolicy/guard-rayservices", "*v1.ValidatingAdmissionPolicy/guard-namespaces", "*v1.ValidatingAdmissionPolicy/guard-traffic",
		"*v1.ValidatingAdmissionPolicyBinding/guard-rayservices", "*v1.ValidatingAdmissionPolicyBinding/guard-namespaces", "*v1.ValidatingAdmissionPolicyBinding/guard-traffic",
	}
	if !slices.Equal(names, wantNames) {
		t.Errorf("objects %v, want %v", names, wantNames)
	}
	for i, p := range objs.Policies {
		if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
			t.Errorf("%s fails open", p.Name)
		}
		want := []admissionregistrationv1.MatchCondition{{Name: HubMatchCondition, Expression: `request.userInfo.username in ["system:serviceaccount:a:hub","odd\"name"]`}}
		if !slices.Equal(p.Spec.MatchConditions, want) {
			t.Errorf("%s match conditions %+v, want %+v", p.Name, p.Spec.MatchConditions, want)
		}
		b := objs.Bindings[i]
		if b.Spec.PolicyName != p.Name || !slices.Equal(b.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
			t.Errorf("binding %s = %+v, want Deny on %s", b.Name, b.Spec, p.Name)
		}
		for _, v := range p.Spec.Validations {
			if v.Reason == nil || *v.Reason != metav1.StatusReasonForbidden {
				t.Errorf("%s: validation %q is not Forbidden", p.Name, v.Expression)
			}
		}
	}
	wantVars := map[string]string{
		VarAllowedServiceAccounts: `["default"]`, VarAllowedNamespaces: `["team-a"]`, VarAllowHostNetwork: "true",
		VarAllowNodePorts: "false", VarMaxWorkerGroups: "7", VarMinPodSecurityLevel: `"baseline"`, VarUnenforcedNamespaces: "[]",
		VarAllowIngress: "true", VarAllowedGatewayClasses: `["istio","eg"]`, VarAllowedExistingNamespaces: `["argocd"]`,
		VarTrafficNamespaces: `["edge"]`,
	}
	seen := map[string]bool{}
	for _, p := range objs.Policies {
		for _, v := range p.Spec.Variables {
			if want, ok := wantVars[v.Name]; ok && v.Expression != want {
				t.Errorf("%s: variable %s = %s, want %s", p.Name, v.Name, v.Expression, want)
			}
			seen[v.Name] = true
		}
	}
	for name := range wantVars {
		if !seen[name] {
			t.Errorf("no policy has the variable %s", name)
		}
	}
}

// The traffic policy matches what shared/hubaccess.TrafficRules lets the hub write: its
// routes and their backends, in every version.
func TestTrafficPolicyMatchesTrafficRules(t *testing.T) {
	objs, err := Build(DefaultName, Default())
	if err != nil {
		t.Fatal(err)
	}
	p := objs.Policies[2]
	if p.Name != DefaultName+TrafficSuffix {
		t.Fatalf("third policy %s, want %s", p.Name, DefaultName+TrafficSuffix)
	}
	var got []string
	for _, r := range p.Spec.MatchConstraints.ResourceRules {
		if !slices.Equal(r.APIVersions, []string{"*"}) || !slices.Equal(r.Operations, operations()) {
			t.Errorf("rule %+v: want every version, on create and update", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got = append(got, g+"/"+res)
			}
		}
	}
	var want []string
	for _, r := range hubaccess.TrafficRules() {
		if slices.Contains(r.Verbs, "create") {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					want = append(want, g+"/"+res)
				}
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("the traffic policy matches %v, want what TrafficRules lets the hub write: %v", got, want)
	}
}

// Every rule has exactly one validation, whose messages start with its prefix.
func TestRulesHaveValidations(t *testing.T) {
	objs, err := Build(DefaultName, Default())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range objs.Policies {
		for _, v := range p.Spec.Validations {
			rule, _, ok := strings.Cut(strings.TrimPrefix(v.Message, "hubPolicy/"), ": ")
			if !ok || !strings.HasPrefix(v.MessageExpression, "'"+messagePrefix(rule)+"' + ") {
				t.Errorf("%s: validation %q has message %q and messageExpression %q", p.Name, v.Expression, v.Message, v.MessageExpression)
			}
			if !slices.Contains(got, rule) {
				got = append(got, rule)
			}
		}
	}
	if !slices.Equal(got, Rules()) {
		t.Errorf("rules in the policies %v, want Rules() %v", got, Rules())
	}
}

// The chart's copy is what `make manifests` writes today.
func TestGeneratedFileIsCurrent(t *testing.T) {
	objs, err := Build(DefaultName, Default())
	if err != nil {
		t.Fatal(err)
	}
	want, err := YAML(objs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "charts", "rayfleet-spoke", "generated", "hubpolicy.yaml"))
	if err != nil {
		t.Fatalf("%v: run make manifests", err)
	}
	if !bytes.Equal(got, want) {
		t.Error("charts/rayfleet-spoke/generated/hubpolicy.yaml is stale: run make manifests")
	}
}

func TestParseDenial(t *testing.T) {
	gr := schema.GroupResource{Group: "ray.io", Resource: "rayservices"}
	const guardMsg = `hubPolicy/privileged: container "ray-head" in headGroupSpec asks for privileged`
	apiMsg := "ValidatingAdmissionPolicy 'rayfleet-hub-guard-rayservices' with binding 'rayfleet-hub-guard-rayservices' denied request: " + guardMsg
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "ray.io", Kind: "RayService"}, "x", nil)
	invalid.ErrStatus.Message = apiMsg
	tests := []struct {
		name              string
		err               error
		wantRule, wantMsg string
	}{
		{name: "forbidden", err: apierrors.NewForbidden(gr, "x", errors.New(apiMsg)), wantRule: RulePrivileged, wantMsg: guardMsg},
		{name: "wrapped", err: fmt.Errorf("member m1: applying RayService ns/x: %w", apierrors.NewForbidden(gr, "x", errors.New(apiMsg))),
			wantRule: RulePrivileged, wantMsg: guardMsg},
		{name: "invalid", err: invalid, wantRule: RulePrivileged, wantMsg: guardMsg},
		{name: "namespace rule", err: apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "n",
			errors.New(`ValidatingAdmissionPolicy 'g-namespaces' with binding 'g-namespaces' denied request: hubPolicy/namespace: namespace "n", where the hub may not write`)),
			wantRule: RuleNamespace, wantMsg: `hubPolicy/namespace: namespace "n", where the hub may not write`},
		{name: "RBAC", err: apierrors.NewForbidden(gr, "x", errors.New(`User "system:serviceaccount:a:b" cannot create resource "rayservices"`))},
		{name: "other policy", err: apierrors.NewForbidden(gr, "x", errors.New("ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no"))},
		{name: "conflict mentioning the prefix", err: apierrors.NewConflict(gr, "x", errors.New(guardMsg))},
		{name: "plain error", err: errors.New(guardMsg)},
		{name: "nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule, msg, ok := ParseDenial(tt.err)
			if ok != (tt.wantRule != "") || rule != tt.wantRule || msg != tt.wantMsg {
				t.Errorf("ParseDenial(%v) = %q, %q, %v; want %q, %q", tt.err, rule, msg, ok, tt.wantRule, tt.wantMsg)
			}
		})
	}
}

// Every rule's refusal parses back to that rule, whatever characters its name uses.
func TestParseDenialKnowsEveryRule(t *testing.T) {
	gr := schema.GroupResource{Group: "ray.io", Resource: "rayservices"}
	for _, want := range Rules() {
		msg := messagePrefix(want) + `RayService "x" is refused`
		rule, got, ok := ParseDenial(apierrors.NewForbidden(gr, "x", errors.New("ValidatingAdmissionPolicy 'g' with binding 'g' denied request: "+msg)))
		if !ok || rule != want || got != msg {
			t.Errorf("ParseDenial of %q = %q, %q, %v; want %q", msg, rule, got, ok, want)
		}
	}
}
