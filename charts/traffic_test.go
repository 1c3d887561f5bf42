package charts_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
)

// The hub's traffic rights are a Role per asked-for namespace, exactly shared/hubaccess's
// TrafficRules, on both charts; nothing when none is asked for.
func TestTrafficRBAC(t *testing.T) {
	tests := []struct {
		name           string
		chart          string
		set            []string
		wantNamespaces []string
		wantRole       string
		wantSA         string
	}{
		{name: "hub default", chart: hubChart},
		{
			name: "hub namespaces", chart: hubChart, set: []string{`json:traffic.namespaces=["gw","edge"]`},
			wantNamespaces: []string{"gw", "edge"}, wantRole: "rayfleet-hub-traffic", wantSA: "rayfleet-hub",
		},
		{
			name: "hub renamed", chart: hubChart, set: []string{`json:traffic.namespaces=["gw"]`, "fullnameOverride=fleet-hub"},
			wantNamespaces: []string{"gw"}, wantRole: "fleet-hub-traffic", wantSA: "fleet-hub",
		},
		{name: "spoke default", chart: spokeChart},
		{
			name: "spoke namespace", chart: spokeChart, set: []string{"hubTraffic.namespace=gw"},
			wantNamespaces: []string{"gw"}, wantRole: hubaccess.TrafficRoleName, wantSA: hubaccess.ServiceAccountName,
		},
		{
			name: "spoke namespaces and the earlier single one, once each", chart: spokeChart,
			set:            []string{`json:hubTraffic.namespaces=["team-a","gw"]`, "hubTraffic.namespace=gw"},
			wantNamespaces: []string{"team-a", "gw"}, wantRole: hubaccess.TrafficRoleName, wantSA: hubaccess.ServiceAccountName,
		},
		{
			// The identity is then rayfleet join's, in the release namespace under the same name.
			name: "spoke namespace, identity left to join", chart: spokeChart,
			set:            []string{"hubTraffic.namespace=gw", "hubAccess.create=false", "hubAccess.serviceAccountName=hub"},
			wantNamespaces: []string{"gw"}, wantRole: hubaccess.TrafficRoleName, wantSA: "hub",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustRender(t, tt.chart, tt.set...)
			var roles, bindings []object
			for _, o := range m {
				if strings.HasSuffix(o.Name, "-traffic") && (o.Kind == "Role" || o.Kind == "RoleBinding") {
					if o.Kind == "Role" {
						roles = append(roles, o)
					} else {
						bindings = append(bindings, o)
					}
				}
			}
			if len(roles) != len(tt.wantNamespaces) || len(bindings) != len(tt.wantNamespaces) {
				t.Fatalf("rendered %d traffic Roles and %d RoleBindings, want one each in %v", len(roles), len(bindings), tt.wantNamespaces)
			}
			for _, ns := range tt.wantNamespaces {
				var role rbacv1.Role
				var binding rbacv1.RoleBinding
				decodeIn(t, roles, ns, &role)
				decodeIn(t, bindings, ns, &binding)
				if role.Name != tt.wantRole || binding.Name != tt.wantRole {
					t.Errorf("Role %s and RoleBinding %s in %s, want both named %s", role.Name, binding.Name, ns, tt.wantRole)
				}
				if diff := cmp.Diff(hubaccess.TrafficRules(), role.Rules); diff != "" {
					t.Errorf("Role %s/%s rules differ from hubaccess.TrafficRules() (-contract +rendered):\n%s", ns, role.Name, diff)
				}
				assertBinding(t, binding.RoleRef, binding.Subjects, "Role", tt.wantRole, tt.wantSA, releaseNS)
			}
		})
	}
}

// Opting into every namespace gives one ClusterRole with exactly TrafficRules, and no Roles.
func TestTrafficRBACAllNamespaces(t *testing.T) {
	for _, tt := range []struct {
		name, chart, set, wantRole, wantSA string
	}{
		{name: "hub", chart: hubChart, set: "traffic.allNamespaces=true", wantRole: "rayfleet-hub-traffic", wantSA: "rayfleet-hub"},
		{name: "spoke", chart: spokeChart, set: "hubTraffic.allNamespaces=true", wantRole: hubaccess.TrafficRoleName, wantSA: hubaccess.ServiceAccountName},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var role rbacv1.ClusterRole
			var binding rbacv1.ClusterRoleBinding
			var roles int
			for _, o := range mustRender(t, tt.chart, tt.set) {
				switch {
				case o.Kind == "Role" && o.Name == tt.wantRole:
					roles++
				case o.Kind == "ClusterRole" && o.Name == tt.wantRole:
					decodeIn(t, []object{o}, "", &role)
				case o.Kind == "ClusterRoleBinding" && o.Name == tt.wantRole:
					decodeIn(t, []object{o}, "", &binding)
				}
			}
			if roles != 0 || role.Name != tt.wantRole {
				t.Fatalf("rendered %d traffic Roles and ClusterRole %q, want none and %s", roles, role.Name, tt.wantRole)
			}
			if diff := cmp.Diff(hubaccess.TrafficRules(), role.Rules); diff != "" {
				t.Errorf("ClusterRole %s rules differ from hubaccess.TrafficRules() (-contract +rendered):\n%s", role.Name, diff)
			}
			assertBinding(t, binding.RoleRef, binding.Subjects, "ClusterRole", tt.wantRole, tt.wantSA, releaseNS)
		})
	}
}

// decodeIn strictly decodes the one object of objs in namespace ns into into.
func decodeIn(t *testing.T, objs []object, ns string, into any) {
	t.Helper()
	var found []object
	for _, o := range objs {
		if o.Namespace == ns {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("found %d objects in namespace %s, want 1", len(found), ns)
	}
	if err := yaml.UnmarshalStrict(found[0].YAML, into); err != nil {
		t.Fatalf("decoding %s %s/%s: %v", found[0].Kind, ns, found[0].Name, err)
	}
}

func TestTrafficValues(t *testing.T) {
	tests := []struct {
		name      string
		chart     string
		set       []string
		wantInErr string
	}{
		{name: "hub namespace not a name", chart: hubChart, set: []string{`json:traffic.namespaces=["Gateway_NS"]`}, wantInErr: "/traffic/namespaces/0"},
		{name: "hub namespace twice", chart: hubChart, set: []string{`json:traffic.namespaces=["gw","gw"]`}, wantInErr: "/traffic/namespaces"},
		{name: "hub namespaces not a list", chart: hubChart, set: []string{"traffic.namespaces=gw"}, wantInErr: "/traffic/namespaces"},
		{name: "spoke namespace not a name", chart: spokeChart, set: []string{"hubTraffic.namespace=Gateway_NS"}, wantInErr: "/hubTraffic/namespace"},
		{name: "spoke namespaces not names", chart: spokeChart, set: []string{`json:hubTraffic.namespaces=["Gateway_NS"]`}, wantInErr: "/hubTraffic/namespaces/0"},
		{name: "hub all namespaces not a boolean", chart: hubChart, set: []string{"traffic.allNamespaces=yes"}, wantInErr: "/traffic/allNamespaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := render(t, tt.chart, tt.set...)
			if err == nil || !strings.Contains(err.Error(), tt.wantInErr) {
				t.Errorf("helm template with %v = %v, want an error naming %s", tt.set, err, tt.wantInErr)
			}
		})
	}
	for _, c := range []struct {
		chart string
		set   string
	}{{hubChart, "traffic.namespaces={gw,edge}"}, {hubChart, "traffic.allNamespaces=true"}, {spokeChart, "hubTraffic.namespace=gw"},
		{spokeChart, "hubTraffic.namespaces={team-a,team-b}"}, {spokeChart, "hubTraffic.allNamespaces=true"}} {
		args := []string{"lint", "--strict", c.chart, "--namespace", releaseNS, "--set", c.set}
		if out, err := runHelm(t, args...); err != nil {
			t.Errorf("helm %v: %v\n%s", args, err, out)
		}
	}
}
