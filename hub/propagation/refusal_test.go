package propagation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestRefusalOf(t *testing.T) {
	rs := schema.GroupResource{Group: "ray.io", Resource: "rayservices"}
	terminating := apierrors.NewForbidden(schema.GroupResource{Resource: "rayservices"}, "svc",
		errors.New("unable to create new content in namespace team-a because it is being terminated"))
	tooLarge := apierrors.NewRequestEntityTooLargeError("limit is 3145728")
	etcdTooLarge := apierrors.NewInternalError(errors.New("etcdserver: request is too large"))
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "ray.io", Kind: "RayService"}, "svc",
		field.ErrorList{field.Invalid(field.NewPath("spec", "rayClusterConfig"), "x", "bad")})
	guard := apierrors.NewForbidden(rs, "svc", errors.New(`ValidatingAdmissionPolicy 'rayfleet-hub-policy' with binding `+
		`'rayfleet-hub-policy' denied request: hubPolicy/privileged: container "ray-head" in headGroupSpec asks for privileged`))
	tests := []struct {
		name     string
		err      error
		wantRule string
		wantMsg  string
		short    bool
	}{
		{name: "the member's hub policy guard", err: fmt.Errorf("cluster eu: %w", guard),
			wantRule: "hubPolicy/privileged", wantMsg: `container "ray-head" in headGroupSpec asks for privileged`},
		{name: "nil", err: nil},
		{name: "a timeout is transient", err: context.DeadlineExceeded},
		{name: "a conflict is transient", err: apierrors.NewConflict(rs, "svc", errors.New("changed"))},
		{name: "forbidden by RBAC is transient (the member's admin may be fixing it)",
			err: apierrors.NewForbidden(rs, "svc", errors.New(`User "x" cannot create resource`))},
		{name: "a terminating namespace", err: terminating, wantRule: RuleNamespaceTerminating, short: true},
		{name: "wrapped, as the executor returns it", err: fmt.Errorf("apply RayService a/b: %w", terminating),
			wantRule: RuleNamespaceTerminating, short: true},
		{name: "our own terminating-namespace finding", err: fmt.Errorf("cluster eu: %w", NamespaceTerminating("team-a")),
			wantRule: RuleNamespaceTerminating, short: true},
		{name: "413 from the API server", err: tooLarge, wantRule: RuleRequestTooLarge},
		{name: "etcd's limit", err: etcdTooLarge, wantRule: RuleRequestTooLarge},
		{name: "the member's schema rejects it", err: invalid, wantRule: RuleInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := RefusalOf(tt.err)
			if ok != (tt.wantRule != "") {
				t.Fatalf("RefusalOf(%v) ok = %v, want %v", tt.err, ok, tt.wantRule != "")
			}
			if !ok {
				return
			}
			if got.Rule != tt.wantRule {
				t.Errorf("rule = %q, want %q", got.Rule, tt.wantRule)
			}
			wantRetry := RefusalRetry
			if tt.short {
				wantRetry = TerminatingRetry
			}
			if got.Retry != wantRetry {
				t.Errorf("retry = %v, want %v", got.Retry, wantRetry)
			}
			if got.Message == "" {
				t.Error("the refusal keeps no message")
			}
			if tt.wantMsg != "" && got.Message != tt.wantMsg {
				t.Errorf("message = %q, want %q", got.Message, tt.wantMsg)
			}
		})
	}
}

func TestRefusalMessageIsBounded(t *testing.T) {
	long := strings.Repeat("é", 2000) // 4000 bytes, two per rune
	got, ok := RefusalOf(&apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid, Message: long,
	}})
	if !ok {
		t.Fatal("an Invalid answer is a refusal")
	}
	if len(got.Message) > maxRefusalMessage {
		t.Errorf("message is %d bytes, want at most %d", len(got.Message), maxRefusalMessage)
	}
	if !utf8.ValidString(got.Message) || len(got.Message) < maxRefusalMessage-utf8.UTFMax {
		t.Errorf("message is not cut on the rune boundary nearest the limit: %d bytes, ...%q", len(got.Message), got.Message[len(got.Message)-8:])
	}
}
