package sweep

import (
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

func memberCopy(hubName, uid string) *rayv1.RayService {
	l := map[string]string{labels.OriginNamespace: "team", labels.OriginName: "svc", labels.OriginUID: uid}
	if hubName != "" {
		l[labels.OriginHub] = hubName
	}
	return &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "svc", Labels: l}}
}

func hubService(uid string) *rayv1.RayService {
	return &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "svc", UID: types.UID(uid)}}
}

func binding(spec []string, status ...string) *fleetv1alpha1.RayServiceBinding {
	b := &fleetv1alpha1.RayServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "svc"}}
	b.Spec.Clusters = spec
	for _, name := range status {
		b.Status.Clusters = append(b.Status.Clusters, fleetv1alpha1.ClusterStatus{Name: name})
	}
	return b
}

func TestJudge(t *testing.T) {
	deleting := memberCopy("rayfleet", "u1")
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	noOrigin := memberCopy("rayfleet", "u1")
	delete(noOrigin.Labels, labels.OriginName)
	tests := []struct {
		name       string
		copy       *rayv1.RayService
		hub        *rayv1.RayService
		binding    *fleetv1alpha1.RayServiceBinding
		wantOrphan bool
		wantReason string
	}{
		{name: "hub RayService gone", copy: memberCopy("rayfleet", "u1"),
			wantOrphan: true, wantReason: "its hub RayService team/svc no longer exists"},
		{name: "hub RayService gone, binding left behind", copy: memberCopy("rayfleet", "u1"), binding: binding([]string{"eu"}),
			wantOrphan: true, wantReason: "no longer exists"},
		{name: "binding lists the cluster in spec", copy: memberCopy("rayfleet", "u1"), hub: hubService("u1"),
			binding: binding([]string{"eu"}), wantReason: "the binding of team/svc lists cluster eu"},
		{name: "binding lists the cluster in status only (leaving)", copy: memberCopy("rayfleet", "u1"), hub: hubService("u1"),
			binding: binding([]string{"us"}, "us", "eu"), wantReason: "lists cluster eu"},
		{name: "binding no longer lists the cluster", copy: memberCopy("rayfleet", "u1"), hub: hubService("u1"),
			binding: binding([]string{"us"}, "us"), wantOrphan: true, wantReason: "the binding of team/svc no longer lists cluster eu"},
		{name: "binding with no clusters", copy: memberCopy("rayfleet", "u1"), hub: hubService("u1"),
			binding: binding(nil), wantOrphan: true, wantReason: "no longer lists cluster eu"},
		{name: "hub RayService without a binding yet", copy: memberCopy("rayfleet", "u1"), hub: hubService("u1"),
			wantReason: "has no binding yet"},
		{name: "replaced hub RayService without a binding yet", copy: memberCopy("rayfleet", "u0"), hub: hubService("u1"),
			wantReason: "has no binding yet"},
		{name: "replaced hub RayService placed here: the fleet reconciler takes it over", copy: memberCopy("rayfleet", "u0"),
			hub: hubService("u1"), binding: binding([]string{"eu"}), wantReason: "lists cluster eu"},
		{name: "replaced hub RayService placed elsewhere", copy: memberCopy("rayfleet", "u0"), hub: hubService("u1"),
			binding: binding([]string{"us"}), wantOrphan: true, wantReason: "(uid u0) was replaced by another (uid u1)"},
		{name: "another hub's copy", copy: memberCopy("other-hub", "u1"), wantReason: `a copy of hub "other-hub"`},
		{name: "no origin-hub label", copy: memberCopy("", "u1"), wantReason: "no origin-hub label"},
		{name: "no origin name", copy: noOrigin, wantReason: "no origin namespace and name"},
		{name: "being deleted", copy: deleting, wantReason: "being deleted already"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(Judged{HubName: "rayfleet", Cluster: "eu", Copy: tt.copy, Hub: tt.hub, Binding: tt.binding})
			if v.Orphan != tt.wantOrphan {
				t.Errorf("Orphan = %v, want %v (%s)", v.Orphan, tt.wantOrphan, v.Reason)
			}
			if !strings.Contains(v.Reason, tt.wantReason) {
				t.Errorf("Reason = %q, want it to contain %q", v.Reason, tt.wantReason)
			}
		})
	}
}
