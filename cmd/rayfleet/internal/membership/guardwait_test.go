package membership

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rayfleet/rayfleet/shared/hubpolicy"
	rfscheme "github.com/rayfleet/rayfleet/shared/scheme"
)

const testHub = "system:serviceaccount:rayfleet-system:rayfleet-hub"

func TestJudgeProbe(t *testing.T) {
	rayServices := schema.GroupResource{Group: "ray.io", Resource: "rayservices"}
	for _, tc := range []struct {
		name string
		err  error
		want probeVerdict
	}{
		{"admitted", nil, probeAdmitted},
		{"refused by the guard", apierrors.NewForbidden(rayServices, probeName, errors.New(
			"ValidatingAdmissionPolicy 'g-rayservices' with binding 'g-rayservices' denied request: hubPolicy/privileged: container \"ray-head\" asks for privileged")), probeRefused},
		{"refused by the guard, wrapped", fmt.Errorf("creating: %w", apierrors.NewForbidden(rayServices, probeName, errors.New(
			"denied request: hubPolicy/namespaceOwner: RayService in namespace \"x\""))), probeRefused},
		{"the hub's RBAC not loaded yet", apierrors.NewForbidden(rayServices, probeName, errors.New(
			`User "`+testHub+`" cannot create resource "rayservices" in API group "ray.io"`)), probeFailed},
		{"impersonation refused", apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "rayfleet-hub", errors.New(
			`User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "rayfleet-system"`)), probeNoImpersonation},
		{"no RayService CRD", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "ray.io", Kind: "RayService"}}, probeNoKind},
		{"server error", apierrors.NewServiceUnavailable("etcd"), probeFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judgeProbe(tc.err); got != tc.want {
				t.Errorf("judgeProbe(%v) = %d, want %d", tc.err, got, tc.want)
			}
		})
	}
}

func TestGuardPolicies(t *testing.T) {
	cfg := hubpolicy.Default()
	cfg.HubUsernames = []string{"system:serviceaccount:other:hub", testHub}
	guard, err := hubpolicy.Build("chart-hub-guard", cfg)
	if err != nil {
		t.Fatal(err)
	}
	unrelated := admissionregistrationv1.ValidatingAdmissionPolicy{}
	unrelated.Name = "someone-elses"
	unrelated.Spec.MatchConstraints = guard.Policies[0].Spec.MatchConstraints
	vaps := []admissionregistrationv1.ValidatingAdmissionPolicy{unrelated, *guard.Policies[0], *guard.Policies[1]}

	want := []guardPolicy{{"chart-hub-guard-namespaces", namespacesResource}, {"chart-hub-guard-rayservices", rayServicesResource}}
	if got := guardPolicies(vaps, testHub); !slices.Equal(got, want) {
		t.Errorf("guardPolicies for the hub = %v, want %v", got, want)
	}
	// A prefix of a listed username is not listed.
	if got := guardPolicies(vaps, "system:serviceaccount:rayfleet-system:rayfleet"); len(got) != 0 {
		t.Errorf("guardPolicies for another user = %v, want none", got)
	}
}

// answers is a client of the member as the hub whose dry runs get, one after the other, the
// answers of script (the last one from then on); calls counts them.
func answers(t *testing.T, script ...error) (client.Client, *int) {
	t.Helper()
	scheme, err := rfscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, _ client.Object, _ ...client.CreateOption) error {
			err := script[min(calls, len(script)-1)]
			calls++
			return err
		},
	})
	return c, &calls
}

// runWait runs waitForGuard on the fake clock, stepping it whenever the wait waits, and returns
// its result with the fake time that passed.
func runWait(t *testing.T, admin, asHub client.Client, timeout time.Duration) (GuardCheck, time.Duration, error) {
	t.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	type result struct {
		check GuardCheck
		err   error
	}
	done := make(chan result, 1)
	go func() {
		check, err := waitForGuard(t.Context(), admin, asHub, guardWait{namespace: "rayfleet-system", username: testHub, timeout: timeout, clock: clk})
		done <- result{check, err}
	}()
	for {
		select {
		case r := <-done:
			return r.check, clk.Since(start), r.err
		default:
		}
		if clk.HasWaiters() {
			clk.Step(guardPollInterval)
		}
	}
}

func TestWaitForGuard(t *testing.T) {
	scheme, err := rfscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	guard, err := hubpolicy.Build(hubpolicy.DefaultName, hubpolicy.Config{
		HubUsernames: []string{testHub}, MinPodSecurityLevel: hubpolicy.LevelBaseline, MaxWorkerGroups: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	admin := fake.NewClientBuilder().WithScheme(scheme).WithObjects(guard.Policies[0], guard.Policies[1]).Build()
	denied := apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, probeName, errors.New("denied request: hubPolicy/namespaceOwner: no"))
	noImpersonation := apierrors.NewForbidden(schema.GroupResource{Resource: "serviceaccounts"}, "rayfleet-hub", errors.New(`User "alice" cannot impersonate resource "serviceaccounts"`))

	t.Run("admitted until loaded", func(t *testing.T) {
		asHub, calls := answers(t, nil, nil, nil, denied)
		check, waited, err := runWait(t, admin, asHub, time.Minute)
		if err != nil || len(check.Enforced) != 2 || len(check.Notes) != 0 {
			t.Fatalf("waitForGuard = %+v, %v; want both policies enforced", check, err)
		}
		// Two policies per round: admitted, admitted; admitted, refused; refused.
		if *calls != 5 || waited != 2*guardPollInterval {
			t.Errorf("%d dry runs over %s, want 5 over %s", *calls, waited, 2*guardPollInterval)
		}
	})
	t.Run("never loaded", func(t *testing.T) {
		asHub, _ := answers(t, nil)
		_, waited, err := runWait(t, admin, asHub, 2*time.Second)
		if err == nil || waited < 2*time.Second || waited > 2*time.Second+guardPollInterval {
			t.Fatalf("waitForGuard: %v after %s; want a timeout after 2s", err, waited)
		}
		for _, want := range []string{"not in force after 2s", "ValidatingAdmissionPolicy rayfleet-hub-guard-rayservices (a dry-run rayservices as the hub: admitted)",
			"rayfleet-hub-guard-namespaces"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q lacks %q", err, want)
			}
		}
	})
	t.Run("impersonation refused", func(t *testing.T) {
		asHub, calls := answers(t, noImpersonation)
		check, waited, err := runWait(t, admin, asHub, time.Minute)
		if err != nil || len(check.Notes) != 1 || !strings.Contains(check.Notes[0], "may not impersonate") || *calls != 1 {
			t.Fatalf("waitForGuard = %+v, %v after %d dry runs; want a note after one", check, err, *calls)
		}
		if waited != unverifiedGuardWait {
			t.Errorf("waited %s, want %s", waited, unverifiedGuardWait)
		}
	})
	t.Run("no guard", func(t *testing.T) {
		asHub, calls := answers(t, nil)
		check, _, err := runWait(t, fake.NewClientBuilder().WithScheme(scheme).Build(), asHub, time.Minute)
		if err != nil || len(check.Notes) != 1 || *calls != 0 {
			t.Errorf("waitForGuard without a guard = %+v, %v after %d dry runs; want a note and none", check, err, *calls)
		}
	})
}
