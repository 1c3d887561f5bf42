package rayservice

import (
	"context"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name       string
		rs         *rayv1.RayService
		gatewayAPI bool
		wantReason string // "" = valid
		wantMsg    string
	}{
		{"valid", raybuilder.MakeRayService("svc", "ns").Obj(), false, "", ""},
		{"incremental with Gateway API", raybuilder.MakeRayService("svc", "ns").Incremental(50, 10, 10).Obj(), true, "", ""},
		{"incremental without Gateway API", raybuilder.MakeRayService("svc", "ns").Incremental(50, 10, 10).Obj(), false,
			reasonInvalidSpec, "Gateway API"},
		{"name too long", raybuilder.MakeRayService(strings.Repeat("x", 48), "ns").Obj(), true, reasonInvalidMetadata, "47"},
		{"bad initializing timeout", raybuilder.MakeRayService("svc", "ns").Annotation(labels.InitializingTimeout, "soon").Obj(), true,
			reasonInvalidMetadata, labels.InitializingTimeout},
		{"malformed serveConfigV2", raybuilder.MakeRayService("svc", "ns").ServeConfig("applications: [").Obj(), true, reasonInvalidSpec, "serveConfigV2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := testReconciler(t, nil, clocktesting.NewFakeClock(t0))
			r.opts.GatewayAPI = tt.gatewayAPI
			s := newScope(tt.rs)
			invalid := r.validate(context.Background(), s)
			if invalid != (tt.wantReason != "") {
				t.Fatalf("invalid = %v", invalid)
			}
			if !invalid {
				return
			}
			c := meta.FindStatusCondition(s.rs.Status.Conditions, string(rayv1.RayServiceReady))
			if c == nil || c.Reason != string(rayv1.RayServiceValidationFailed) || !strings.Contains(c.Message, tt.wantMsg) {
				t.Fatalf("Ready = %+v, want ValidationFailed mentioning %q", c, tt.wantMsg)
			}
			select {
			case e := <-r.recorder.(*events.FakeRecorder).Events:
				if !strings.Contains(e, tt.wantReason) {
					t.Fatalf("event %q, want reason %s", e, tt.wantReason)
				}
			default:
				t.Fatal("no event")
			}
		})
	}
}
