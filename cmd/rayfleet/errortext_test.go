package main

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestErrorText covers how a failed command's error is printed: a write the member's guard
// refused names the guard's rule and message, after what the command was doing.
func TestErrorText(t *testing.T) {
	namespaces := schema.GroupResource{Resource: "namespaces"}
	guard := apierrors.NewForbidden(namespaces, "serve", errors.New("ValidatingAdmissionPolicy 'rayfleet-hub-guard-namespaces' with binding "+
		"'rayfleet-hub-guard-namespaces' denied request: hubPolicy/namespaceOwner: namespace serve: the hub may not change fleet.rayfleet.io/hub-namespace"))
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "ray.io", Kind: "RayService"}, "llm", nil)
	invalid.ErrStatus.Message = "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: hubPolicy/privileged: container \"ray-head\" asks for privileged"
	rbac := apierrors.NewForbidden(namespaces, "serve", errors.New(`User "alice" cannot update resource "namespaces"`))
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "guard, wrapped", err: fmt.Errorf("labelling namespace serve: %w", guard),
			want: "labelling namespace serve: refused by the member's guard, rule namespaceOwner: namespace serve: the hub may not change fleet.rayfleet.io/hub-namespace"},
		{name: "guard", err: guard,
			want: "refused by the member's guard, rule namespaceOwner: namespace serve: the hub may not change fleet.rayfleet.io/hub-namespace"},
		{name: "guard answering Invalid", err: fmt.Errorf("member m1: %w", invalid),
			want: `member m1: refused by the member's guard, rule privileged: container "ray-head" asks for privileged`},
		{name: "RBAC as the API server says it", err: fmt.Errorf("labelling namespace serve: %w", rbac),
			want: `labelling namespace serve: namespaces "serve" is forbidden: User "alice" cannot update resource "namespaces"`},
		{name: "plain", err: errors.New("hubPolicy/privileged: not from the API server"), want: "hubPolicy/privileged: not from the API server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorText(tt.err); got != tt.want {
				t.Errorf("errorText = %q\nwant %q", got, tt.want)
			}
		})
	}

	var stderr bytes.Buffer
	cmd := &cobra.Command{Use: "join"}
	if code := codeOf(cmd, fmt.Errorf("labelling namespace serve: %w", guard), &stderr); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if want := "join: labelling namespace serve: refused by the member's guard, rule namespaceOwner: namespace serve: " +
		"the hub may not change fleet.rayfleet.io/hub-namespace\n"; stderr.String() != want {
		t.Errorf("printed %q, want %q", stderr.String(), want)
	}
}
