package propagation

import (
	"fmt"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// hubOwned is a managedFields entry of the hub's apply owning the given metadata field set.
func hubOwned(metadata string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{
		Manager:    labels.HubFieldManager,
		Operation:  metav1.ManagedFieldsOperationApply,
		APIVersion: "ray.io/v1",
		FieldsType: "FieldsV1",
		FieldsV1:   metav1.NewFieldsV1(`{"f:metadata":` + metadata + `,"f:spec":{"f:serveConfigV2":{}}}`),
	}
}

func TestDrifted(t *testing.T) {
	hub := raybuilder.MakeRayService("svc", "ns").Obj()
	hub.Labels = map[string]string{"app": "fruit"}
	hub.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{
		{Name: "serve", ContainerPort: 8000},
	}
	desired, err := MemberRayService(testHub, hub, "m1", nil, nil)
	if err != nil {
		t.Fatalf("MemberRayService: %v", err)
	}
	ownedNow := hubOwned(fmt.Sprintf(`{"f:labels":{"f:app":{},"f:%s":{}},"f:annotations":{"f:%s":{}}}`,
		labels.OriginName, labels.SpecHash))
	// stored is desired as the member's API server returns it after the apply.
	stored := func() *rayv1.RayService {
		m := desired.DeepCopy()
		m.UID, m.ResourceVersion, m.Generation = "member-uid", "1234", 3
		m.CreationTimestamp = metav1.Now()
		m.ManagedFields = []metav1.ManagedFieldsEntry{ownedNow}
		return m
	}
	tests := []struct {
		name   string
		member func(m *rayv1.RayService)
		want   bool
	}{
		{name: "as applied", member: func(*rayv1.RayService) {}},
		{name: "status, resourceVersion, generation and managedFields of others", member: func(m *rayv1.RayService) {
			m.ResourceVersion, m.Generation = "9999", 8
			m.Status.ServiceStatus = rayv1.Running
			m.Status.NumServeEndpoints = 3
			m.Status.ActiveServiceStatus.RayClusterName = "svc-abcde"
			m.ManagedFields = append(m.ManagedFields, metav1.ManagedFieldsEntry{
				Manager: "spoke", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
				FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:serviceStatus":{}}}`),
			})
		}},
		{name: "server defaults inside a list element", member: func(m *rayv1.RayService) {
			c := &m.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0]
			for i := range c.Ports {
				c.Ports[i].Protocol = corev1.ProtocolTCP
			}
			c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
		}},
		{name: "fields the hub does not set, added on the member", member: func(m *rayv1.RayService) {
			m.Spec.ServiceUnhealthySecondThreshold = ptr.To[int32](120)
		}},
		{name: "labels and annotations of other writers", member: func(m *rayv1.RayService) {
			m.Labels["backup.example.com/policy"] = "daily"
			m.Annotations["example.com/note"] = "hi"
		}},
		{name: "replicas changed on the member", want: true, member: func(m *rayv1.RayService) {
			m.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](7)
		}},
		{name: "serve config changed on the member", want: true, member: func(m *rayv1.RayService) {
			m.Spec.ServeConfigV2 = "applications: []\n"
		}},
		{name: "worker group added on the member", want: true, member: func(m *rayv1.RayService) {
			raybuilder.AppendGroup(&m.Spec.RayClusterSpec, "extra", 1)
		}},
		{name: "field the hub sets removed on the member", want: true, member: func(m *rayv1.RayService) {
			m.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image = ""
		}},
		{name: "origin label removed", want: true, member: func(m *rayv1.RayService) {
			delete(m.Labels, labels.OriginUID)
		}},
		{name: "user label changed", want: true, member: func(m *rayv1.RayService) { m.Labels["app"] = "veg" }},
		{name: "spec hash of an older spec", want: true, member: func(m *rayv1.RayService) {
			m.Annotations[labels.SpecHash] = "0123"
		}},
		{name: "label the hub applied before and no longer wants", want: true, member: func(m *rayv1.RayService) {
			m.Labels["tier"] = "gold"
			m.ManagedFields = []metav1.ManagedFieldsEntry{hubOwned(`{"f:labels":{"f:app":{},"f:tier":{}}}`)}
		}},
		{name: "annotation the hub applied before and no longer wants", want: true, member: func(m *rayv1.RayService) {
			m.Annotations["note"] = "x"
			m.ManagedFields = []metav1.ManagedFieldsEntry{hubOwned(`{"f:annotations":{"f:note":{}}}`)}
		}},
		{name: "a dropped key already gone", member: func(m *rayv1.RayService) {
			m.ManagedFields = []metav1.ManagedFieldsEntry{hubOwned(`{"f:labels":{"f:tier":{}}}`)}
		}},
		{name: "same key owned by another manager", member: func(m *rayv1.RayService) {
			m.Labels["tier"] = "gold"
			e := hubOwned(`{"f:labels":{"f:tier":{}}}`)
			e.Manager = "kubectl"
			m.ManagedFields = []metav1.ManagedFieldsEntry{e}
		}},
		{name: "unreadable managedFields", member: func(m *rayv1.RayService) {
			m.ManagedFields = []metav1.ManagedFieldsEntry{{
				Manager: labels.HubFieldManager, Operation: metav1.ManagedFieldsOperationApply,
				FieldsV1: metav1.NewFieldsV1(`not json`),
			}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			member := stored()
			tc.member(member)
			if got := Drifted(desired, member); got != tc.want {
				t.Errorf("Drifted = %v, want %v", got, tc.want)
			}
			// The member caches store copies trimmed; the answer must not change.
			if _, err := TrimManagedFields(member); err != nil {
				t.Fatal(err)
			}
			if got := Drifted(desired, member); got != tc.want {
				t.Errorf("Drifted after TrimManagedFields = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTrimManagedFields(t *testing.T) {
	m := raybuilder.MakeRayService("svc", "ns").Obj()
	m.ManagedFields = []metav1.ManagedFieldsEntry{
		hubOwned(`{"f:labels":{"f:app":{}}}`),
		{Manager: "spoke", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
			FieldsV1: metav1.NewFieldsV1(`{"f:status":{}}`)},
		{Manager: labels.HubFieldManager, Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{}}}`)},
	}
	if _, err := TrimManagedFields(m); err != nil {
		t.Fatal(err)
	}
	if len(m.ManagedFields) != 1 {
		t.Fatalf("kept %d entries, want the hub's apply only: %+v", len(m.ManagedFields), m.ManagedFields)
	}
	if got, want := m.ManagedFields[0].FieldsV1.GetRawString(), `{"f:metadata":{"f:labels":{"f:app":{}}}}`; got != want {
		t.Errorf("kept fields %s, want %s", got, want)
	}
	if got, err := TrimManagedFields("not an object"); err != nil || got != "not an object" {
		t.Errorf("a non-object: %v, %v; want it back untouched", got, err)
	}
}

func TestTrimCopy(t *testing.T) {
	m := raybuilder.MakeRayService("svc", "ns").Obj()
	m.Labels = map[string]string{"app": "x"}
	m.Status.NumServeEndpoints = 2
	m.Status.ActiveServiceStatus.RayClusterName = "active"
	m.Status.ActiveServiceStatus.RayClusterStatus.Endpoints = map[string]string{"dashboard": "8265"}
	m.Status.PendingServiceStatus.RayClusterName = "pending"
	m.Status.PendingServiceStatus.RayClusterStatus.Reason = "starting"
	m.ManagedFields = []metav1.ManagedFieldsEntry{hubOwned(`{"f:labels":{"f:app":{}}}`)}
	if _, err := TrimCopy(m); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(m.Spec, rayv1.RayServiceSpec{}) {
		t.Errorf("the spec is kept: %+v", m.Spec)
	}
	for _, st := range []rayv1.RayServiceStatus{m.Status.ActiveServiceStatus, m.Status.PendingServiceStatus} {
		if !equality.Semantic.DeepEqual(st.RayClusterStatus, rayv1.RayClusterStatus{}) {
			t.Errorf("a RayCluster status is kept: %+v", st.RayClusterStatus)
		}
	}
	if m.Labels["app"] != "x" || m.Status.NumServeEndpoints != 2 || len(m.ManagedFields) != 1 ||
		m.Status.ActiveServiceStatus.RayClusterName != "active" || m.Status.PendingServiceStatus.RayClusterName != "pending" {
		t.Errorf("more went than the spec and the RayCluster statuses: labels %v, status %+v, managedFields %d", m.Labels, m.Status, len(m.ManagedFields))
	}
	if got, err := TrimCopy("not an object"); err != nil || got != "not an object" {
		t.Errorf("a non-object: %v, %v; want it back untouched", got, err)
	}
}

func TestDriftedEdges(t *testing.T) {
	desired, err := MemberRayService(testHub, raybuilder.MakeRayService("svc", "ns").Obj(), "m1", nil, nil)
	if err != nil {
		t.Fatalf("MemberRayService: %v", err)
	}
	if !Drifted(desired, nil) {
		t.Error("a missing member copy is not reported as drift")
	}
	if Drifted(nil, desired) {
		t.Error("nothing desired is reported as drift")
	}
}
