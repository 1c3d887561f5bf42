package hubpolicy_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/hubpolicy"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

// trafficObjects are what the hub writes on a traffic cluster for one RayService, in namespace
// ns: a route, and a Service and EndpointSlice standing for a member.
func trafficObjects(ns string) []client.Object {
	return []client.Object{
		&gwv1.HTTPRoute{
			ObjectMeta: metav1.ObjectMeta{Name: "route", Namespace: ns},
			Spec: gwv1.HTTPRouteSpec{CommonRouteSpec: gwv1.CommonRouteSpec{ParentRefs: []gwv1.ParentReference{
				{Namespace: ptr.To(gwv1.Namespace("gateway")), Name: "fleet"},
			}}},
		},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "backend", Namespace: ns},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "serve", Port: 8000}}},
		},
		&discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "backend", Namespace: ns, Labels: map[string]string{discoveryv1.LabelServiceName: "backend"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.10"}}},
		},
	}
}

// TestGuardTraffic runs the guard's traffic policy on a real API server where the hub holds
// the traffic rights in every namespace (hubTraffic.allNamespaces), so that the guard alone
// decides: the hub writes its routes and backends where it created the namespace, where the
// member's admin allowed it (label, allowedExistingNamespaces) or named the namespace for its
// traffic (trafficNamespaces), and nowhere else; a narrowed guard's allowedNamespaces holds too.
func TestGuardTraffic(t *testing.T) {
	env := envtest.Start(t, envtest.WithCRDDirectories("e2e/testdata/gateway-api"))
	ctx := t.Context()
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), gwv1.Install(scheme)); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	def := hubpolicy.Default()
	def.AllowedExistingNamespaces = []string{"listed"}
	def.TrafficNamespaces = []string{"edge"}
	narrow := hubpolicy.Default()
	narrow.HubUsernames = []string{hubpolicy.HubUsername(hubaccess.DefaultNamespace, "narrow-hub")}
	narrow.AllowedNamespaces = []string{"created"}
	narrow.TrafficNamespaces = []string{"edge"}
	for name, cfg := range map[string]hubpolicy.Config{hubpolicy.DefaultName: def, "narrow-guard": narrow} {
		objs, err := hubpolicy.Build(name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range objs.List() {
			mustCreate(ctx, t, admin, obj)
		}
	}
	mustCreate(ctx, t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.DefaultNamespace}})
	mustCreate(ctx, t, admin, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.TrafficRoleName}, Rules: hubaccess.TrafficRules()})
	impersonated := map[string]client.Client{}
	for _, sa := range []string{hubaccess.ServiceAccountName, "narrow-hub"} {
		mustCreate(ctx, t, admin, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: hubaccess.DefaultNamespace}})
		mustCreate(ctx, t, admin, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: sa},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hubaccess.TrafficRoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: hubaccess.DefaultNamespace}},
		})
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{
			UserName: hubpolicy.HubUsername(hubaccess.DefaultNamespace, sa),
			Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + hubaccess.DefaultNamespace, "system:authenticated"},
		}
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		impersonated[sa] = c
	}
	hub, narrowHub := impersonated[hubaccess.ServiceAccountName], impersonated["narrow-hub"]
	for ns, owner := range map[string]string{
		"created": labels.HubNamespaceCreated, "allowed": labels.HubNamespaceAllowed, "foreign": "", "listed": "", "edge": "", "gateway": "",
	} {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if owner != "" {
			n.Labels = map[string]string{labels.HubNamespace: owner}
		}
		mustCreate(ctx, t, admin, n)
	}
	// The API server loads policies asynchronously: wait until both guards refuse.
	for _, c := range []client.Client{hub, narrowHub} {
		gomega.NewWithT(t).Eventually(func() bool {
			_, _, ok := hubpolicy.ParseDenial(c.Create(ctx, trafficObjects("foreign")[1], client.DryRunAll))
			return ok
		}).WithTimeout(waitTimeout).WithPolling(100*time.Millisecond).Should(gomega.BeTrue(), "the guards never refused")
	}

	tests := []struct {
		name, namespace string
		c               client.Client
		// wantRule is the rule refusing every object, "" when all pass.
		wantRule string
	}{
		{name: "a namespace the hub created", namespace: "created", c: hub},
		{name: "a namespace the member's admin labelled allowed", namespace: "allowed", c: hub},
		{name: "a namespace in allowedExistingNamespaces", namespace: "listed", c: hub},
		{name: "a namespace named for traffic", namespace: "edge", c: hub},
		{name: "a namespace the hub did not create", namespace: "foreign", c: hub, wantRule: hubpolicy.RuleNamespaceOwner},
		{name: "the Gateway's namespace", namespace: "gateway", c: hub, wantRule: hubpolicy.RuleNamespaceOwner},
		{name: "narrowed: the one allowed namespace", namespace: "created", c: narrowHub},
		{name: "narrowed: a namespace outside allowedNamespaces", namespace: "allowed", c: narrowHub, wantRule: hubpolicy.RuleNamespace},
		{name: "narrowed: a namespace named for traffic", namespace: "edge", c: narrowHub},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, obj := range trafficObjects(tt.namespace) {
				err := tt.c.Create(ctx, obj, client.DryRunAll)
				rule, msg, refused := hubpolicy.ParseDenial(err)
				kind := fmt.Sprintf("%T", obj)
				switch {
				case tt.wantRule == "" && err != nil:
					t.Errorf("%s in %s: %v, want it written", kind, tt.namespace, err)
				case tt.wantRule != "" && (!refused || rule != tt.wantRule):
					t.Errorf("%s in %s: %v, want refused by hubPolicy/%s", kind, tt.namespace, err, tt.wantRule)
				case tt.wantRule == hubpolicy.RuleNamespaceOwner && !strings.Contains(msg, `"`+obj.GetName()+`" in namespace "`+tt.namespace+
					`", which the hub did not create and this member has not allowed it into`):
					t.Errorf("%s in %s: message %q does not name the object and namespace", kind, tt.namespace, msg)
				}
			}
		})
	}

	t.Run("updates, and the admin's and deletes untouched", func(t *testing.T) {
		// The admin writes in any namespace; the hub may not update what is there, and may
		// delete (the hub retires the routes earlier releases wrote in the Gateway's namespace).
		for _, obj := range trafficObjects("gateway") {
			mustCreate(ctx, t, admin, obj)
			obj.SetLabels(map[string]string{"changed": "by-the-hub"})
			if rule, _, _ := hubpolicy.ParseDenial(hub.Update(ctx, obj)); rule != hubpolicy.RuleNamespaceOwner {
				t.Errorf("the hub updating %s %s in gateway: rule %q, want %s", fmt.Sprintf("%T", obj), obj.GetName(), rule, hubpolicy.RuleNamespaceOwner)
			}
			if err := hub.Delete(ctx, obj); err != nil {
				t.Errorf("the hub deleting %s %s in gateway: %v", fmt.Sprintf("%T", obj), obj.GetName(), err)
			}
		}
	})
}
