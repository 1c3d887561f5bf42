package charts_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
)

// generatedRules reads chart's generated/role.yaml (from `make manifests`) into its
// ClusterRole's and Role's rules.
func generatedRules(t *testing.T, chart string) (cluster, namespaced []rbacv1.PolicyRule) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chart, "generated", "role.yaml"))
	if err != nil {
		t.Fatalf("%v: run make manifests", err)
	}
	for _, o := range parseManifests(t, data) {
		switch o.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := yaml.UnmarshalStrict(o.YAML, &r); err != nil {
				t.Fatal(err)
			}
			cluster = append(cluster, r.Rules...)
		case "Role":
			var r rbacv1.Role
			if err := yaml.UnmarshalStrict(o.YAML, &r); err != nil {
				t.Fatal(err)
			}
			namespaced = append(namespaced, r.Rules...)
		default:
			t.Fatalf("%s/generated/role.yaml has a %s", chart, o.Kind)
		}
	}
	return cluster, namespaced
}

// The binaries' RBAC is the generated RBAC, re-emitted under the release's names and bound to
// the chart's ServiceAccount; namespaced rules land in the release namespace.
func TestRBACIsGenerated(t *testing.T) {
	tests := []struct {
		chart, release string
		set            []string
		wantName       string // of the roles and bindings
		wantSA         string
		wantRole       bool // whether the markers scope rules to a namespace
	}{
		{chart: hubChart, wantName: "rayfleet-hub", wantSA: "rayfleet-hub", wantRole: true},
		{chart: spokeChart, wantName: "rayfleet-spoke", wantSA: "rayfleet-spoke"},
		{chart: hubChart, set: []string{"fullnameOverride=fleet-hub"}, wantName: "fleet-hub", wantSA: "fleet-hub", wantRole: true},
		{chart: spokeChart, set: []string{"serviceAccount.name=agent"}, wantName: "rayfleet-spoke", wantSA: "agent"},
		{
			chart: spokeChart, set: []string{"serviceAccount.create=false", "serviceAccount.name=existing"},
			wantName: "rayfleet-spoke", wantSA: "existing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.chart+"/"+tt.wantName+"/"+tt.wantSA, func(t *testing.T) {
			wantCluster, wantNamespaced := generatedRules(t, tt.chart)
			if (len(wantNamespaced) > 0) != tt.wantRole {
				t.Fatalf("generated namespaced rules: %d, want some: %v", len(wantNamespaced), tt.wantRole)
			}
			m := mustRender(t, tt.chart, tt.set...)

			var cr rbacv1.ClusterRole
			m.decode(t, "ClusterRole", tt.wantName, &cr)
			if diff := cmp.Diff(wantCluster, cr.Rules); diff != "" {
				t.Errorf("ClusterRole %s rules differ from generated/role.yaml (-generated +rendered):\n%s", tt.wantName, diff)
			}
			var crb rbacv1.ClusterRoleBinding
			m.decode(t, "ClusterRoleBinding", tt.wantName, &crb)
			assertBinding(t, crb.RoleRef, crb.Subjects, "ClusterRole", tt.wantName, tt.wantSA, releaseNS)

			// The hub's token Role (hubaccess.yaml) is the hub's, not the binary's.
			roles := slices.DeleteFunc(m.ofKind("Role"), func(o object) bool { return o.Name == hubaccess.TokenRoleName })
			if !tt.wantRole {
				if len(roles) > 0 {
					t.Errorf("%d Roles rendered, want none", len(roles))
				}
			} else {
				var role rbacv1.Role
				m.decode(t, "Role", tt.wantName, &role)
				if role.Namespace != releaseNS {
					t.Errorf("Role namespace = %q, want the release namespace %q", role.Namespace, releaseNS)
				}
				if diff := cmp.Diff(wantNamespaced, role.Rules); diff != "" {
					t.Errorf("Role %s rules differ from generated/role.yaml (-generated +rendered):\n%s", tt.wantName, diff)
				}
				var rb rbacv1.RoleBinding
				m.decode(t, "RoleBinding", tt.wantName, &rb)
				if rb.Namespace != releaseNS {
					t.Errorf("RoleBinding namespace = %q, want %q", rb.Namespace, releaseNS)
				}
				assertBinding(t, rb.RoleRef, rb.Subjects, "Role", tt.wantName, tt.wantSA, releaseNS)
			}

			sas := m.ofKind("ServiceAccount")
			hasSA := slices.ContainsFunc(sas, func(o object) bool { return o.Name == tt.wantSA })
			if wantSA := !slices.Contains(tt.set, "serviceAccount.create=false"); hasSA != wantSA {
				t.Errorf("ServiceAccount %s rendered: %v, want %v", tt.wantSA, hasSA, wantSA)
			}
		})
	}
}

// Least privilege, checked over every Role and ClusterRole either chart renders.
func TestRBACLeastPrivilege(t *testing.T) {
	tests := []struct {
		name               string
		chart              string
		roleKind, roleName string // "" kind: every role of the chart
		group, resource    string
		wantVerbs          []string // exactly these verbs, sorted; nil: none
	}{
		// The spoke gets and creates the few Secrets it needs by name; listing or watching
		// would expose every Secret of the member.
		{name: "spoke reads Secrets by name only", chart: spokeChart, roleKind: "ClusterRole", roleName: "rayfleet-spoke",
			group: "", resource: "secrets", wantVerbs: []string{"create", "get"}},
		// The hub reads the members' kubeconfigs in its own namespace, and no Secret elsewhere.
		{name: "hub has no cluster-wide Secret access", chart: hubChart, roleKind: "ClusterRole",
			group: "", resource: "secrets"},
		{name: "hub reads Secrets in its namespace", chart: hubChart, roleKind: "Role", roleName: "rayfleet-hub",
			group: "", resource: "secrets", wantVerbs: []string{"get", "list", "watch"}},
		// The hub's identity on a member: no Secrets, no Pods, no exec.
		{name: "hub on a member reads no Secrets", chart: spokeChart, roleKind: "ClusterRole", roleName: hubaccess.ClusterRoleName,
			group: "", resource: "secrets"},
		{name: "hub on a member reads no Pods", chart: spokeChart, roleKind: "ClusterRole", roleName: hubaccess.ClusterRoleName,
			group: "", resource: "pods"},
		{name: "hub on a member cannot exec", chart: spokeChart, roleKind: "ClusterRole", roleName: hubaccess.ClusterRoleName,
			group: "", resource: "pods/exec"},
		// The hub mints tokens for its own ServiceAccount only (resourceNames, TestHubAccess),
		// in a Role; no ClusterRole mints any.
		{name: "no ClusterRole mints tokens", chart: spokeChart, roleKind: "ClusterRole", group: "", resource: "serviceaccounts/token"},
		{name: "the hub mints its own tokens", chart: spokeChart, roleKind: "Role", roleName: hubaccess.TokenRoleName,
			group: "", resource: "serviceaccounts/token", wantVerbs: []string{"create"}},
		{name: "nobody mints tokens", chart: hubChart, group: "", resource: "serviceaccounts/token"},
		{name: "nobody escalates", chart: spokeChart, group: "rbac.authorization.k8s.io", resource: "clusterroles"},
		{name: "nobody escalates", chart: hubChart, group: "rbac.authorization.k8s.io", resource: "clusterroles"},
	}
	for _, tt := range tests {
		t.Run(tt.chart+"/"+tt.name, func(t *testing.T) {
			var verbs []string
			for _, r := range renderedRoles(t, mustRender(t, tt.chart)) {
				if (tt.roleKind != "" && r.kind != tt.roleKind) || (tt.roleName != "" && r.name != tt.roleName) {
					continue
				}
				for _, rule := range r.rules {
					if slices.Contains(rule.APIGroups, tt.group) && slices.Contains(rule.Resources, tt.resource) {
						verbs = append(verbs, rule.Verbs...)
					}
				}
			}
			slices.Sort(verbs)
			if !slices.Equal(verbs, tt.wantVerbs) {
				t.Errorf("verbs on %q %s = %v, want %v", tt.group, tt.resource, verbs, tt.wantVerbs)
			}
		})
	}
}

func TestRBACHasNoWildcards(t *testing.T) {
	for _, chart := range []string{hubChart, spokeChart} {
		t.Run(chart, func(t *testing.T) {
			roles := renderedRoles(t, mustRender(t, chart))
			if len(roles) == 0 {
				t.Fatal("no roles rendered")
			}
			for _, r := range roles {
				for _, rule := range r.rules {
					if slices.Contains(rule.APIGroups, "*") || slices.Contains(rule.Resources, "*") ||
						slices.Contains(rule.Verbs, "*") || len(rule.NonResourceURLs) > 0 {
						t.Errorf("%s %s: rule %+v uses a wildcard or a non-resource URL", r.kind, r.name, rule)
					}
				}
			}
		})
	}
}

// The hub's identity on a member is exactly the shared/hubaccess contract, which `rayfleet
// join` creates too.
func TestHubAccess(t *testing.T) {
	tests := []struct {
		name   string
		set    []string
		create bool
		wantSA string
	}{
		{name: "defaults", create: true, wantSA: hubaccess.ServiceAccountName},
		{name: "renamed", set: []string{"hubAccess.serviceAccountName=hub"}, create: true, wantSA: "hub"},
		{name: "left to rayfleet join", set: []string{"hubAccess.create=false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustRender(t, spokeChart, tt.set...)
			var hubObjects []object
			for _, o := range m {
				if o.Labels["app.kubernetes.io/component"] == "hub-access" {
					hubObjects = append(hubObjects, o)
				}
			}
			if !tt.create {
				if len(hubObjects) != 0 {
					t.Errorf("rendered %d hub-access objects, want none", len(hubObjects))
				}
				if slices.ContainsFunc(m.ofKind("ClusterRole"), func(o object) bool { return o.Name == hubaccess.ClusterRoleName }) {
					t.Errorf("ClusterRole %s rendered without hubAccess.create", hubaccess.ClusterRoleName)
				}
				return
			}
			// No token Secret: `rayfleet join` requests a bound token, which expires.
			if len(hubObjects) != 5 {
				t.Errorf("rendered %d hub-access objects, want ServiceAccount, ClusterRole, ClusterRoleBinding, Role, RoleBinding", len(hubObjects))
			}
			if secrets := m.ofKind("Secret"); len(secrets) > 0 {
				t.Errorf("rendered %d Secrets, want no token Secret", len(secrets))
			}
			var cr rbacv1.ClusterRole
			m.decode(t, "ClusterRole", hubaccess.ClusterRoleName, &cr)
			if diff := cmp.Diff(hubaccess.HubRules(), cr.Rules); diff != "" {
				t.Errorf("ClusterRole %s rules differ from hubaccess.HubRules() (-contract +rendered):\n%s", cr.Name, diff)
			}
			var crb rbacv1.ClusterRoleBinding
			m.decode(t, "ClusterRoleBinding", hubaccess.ClusterRoleName, &crb)
			assertBinding(t, crb.RoleRef, crb.Subjects, "ClusterRole", hubaccess.ClusterRoleName, tt.wantSA, releaseNS)

			var sa corev1.ServiceAccount
			m.decode(t, "ServiceAccount", tt.wantSA, &sa)
			if sa.Namespace != releaseNS {
				t.Errorf("ServiceAccount namespace = %q, want %q", sa.Namespace, releaseNS)
			}
			var role rbacv1.Role
			m.decode(t, "Role", hubaccess.TokenRoleName, &role)
			if diff := cmp.Diff(hubaccess.TokenRules(tt.wantSA), role.Rules); diff != "" {
				t.Errorf("Role %s rules differ from hubaccess.TokenRules (-contract +rendered):\n%s", role.Name, diff)
			}
			if role.Namespace != releaseNS {
				t.Errorf("Role %s namespace = %q, want %q", role.Name, role.Namespace, releaseNS)
			}
			var rb rbacv1.RoleBinding
			m.decode(t, "RoleBinding", hubaccess.TokenRoleName, &rb)
			assertBinding(t, rb.RoleRef, rb.Subjects, "Role", hubaccess.TokenRoleName, tt.wantSA, releaseNS)
		})
	}
}

// role is one rendered Role or ClusterRole.
type role struct {
	kind, name string
	rules      []rbacv1.PolicyRule
}

func renderedRoles(t *testing.T, m manifests) []role {
	t.Helper()
	var out []role
	for _, o := range m {
		if o.Kind != "ClusterRole" && o.Kind != "Role" {
			continue
		}
		var r rbacv1.ClusterRole // a Role has the same fields but aggregationRule
		if err := yaml.UnmarshalStrict(o.YAML, &r); err != nil {
			t.Fatalf("decoding %s %s: %v", o.Kind, o.Name, err)
		}
		out = append(out, role{kind: o.Kind, name: o.Name, rules: r.Rules})
	}
	return out
}

func assertBinding(t *testing.T, ref rbacv1.RoleRef, subjects []rbacv1.Subject, kind, name, sa, ns string) {
	t.Helper()
	wantRef := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	if ref != wantRef {
		t.Errorf("binding roleRef = %+v, want %+v", ref, wantRef)
	}
	wantSubjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}}
	if diff := cmp.Diff(wantSubjects, subjects); diff != "" {
		t.Errorf("binding subjects (-want +got):\n%s", diff)
	}
}

// Every resource the spoke's generated RBAC grants is explained where a member's admin reads
// it: the comment in templates/rbac.yaml and the table in the chart's README.
func TestSpokeRBACIsExplained(t *testing.T) {
	cluster, namespaced := generatedRules(t, spokeChart)
	var docs []string
	for _, file := range []string{filepath.Join(spokeChart, "templates", "rbac.yaml"), filepath.Join(spokeChart, "README.md")} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	for _, rule := range append(cluster, namespaced...) {
		for _, resource := range rule.Resources {
			// A subresource is explained with its resource ("clusterreports(/status)").
			name, sub, _ := strings.Cut(resource, "/")
			for i, doc := range docs {
				if !strings.Contains(doc, name) || (sub != "" && !strings.Contains(doc, "/"+sub)) {
					t.Errorf("%s in generated/role.yaml is not explained in %s", resource, []string{"templates/rbac.yaml", "README.md"}[i])
				}
			}
		}
	}
}
