package rayservice

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/spoke/rayservice/status"
)

// TestTrimEndpointSliceKeepsWhatIsRead trims a full slice and finds the labels, conditions and
// target Pods the reconciler reads unchanged, the rest gone.
func TestTrimEndpointSliceKeepsWhatIsRead(t *testing.T) {
	full := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "s", Labels: map[string]string{discoveryv1.LabelServiceName: "svc"},
			Annotations:   map[string]string{"endpoints.kubernetes.io/last-change-trigger-time": "x"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{"10.0.0.1", "10.0.0.2"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			Hostname:   ptr.To("h"),
			NodeName:   ptr.To("n"),
			Zone:       ptr.To("z"),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p", UID: "uid", ResourceVersion: "7"},
		}, {
			Addresses:  []string{"10.0.0.3"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("serve"), Port: ptr.To[int32](8000)}},
	}
	before := status.ReadyEndpoints([]discoveryv1.EndpointSlice{*full.DeepCopy()})
	got, err := TrimEndpointSlice(full)
	if err != nil {
		t.Fatal(err)
	}
	want := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "s", Labels: map[string]string{discoveryv1.LabelServiceName: "svc"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "p", UID: "uid"},
		}, {
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)},
		}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("trimmed slice (-want +got):\n%s", diff)
	}
	if after := status.ReadyEndpoints([]discoveryv1.EndpointSlice{*want}); after != before || after != 1 {
		t.Errorf("ReadyEndpoints = %d trimmed, %d untrimmed, want 1 both", after, before)
	}
	if other, err := TrimEndpointSlice(&corev1.Pod{}); err != nil || other == nil {
		t.Errorf("TrimEndpointSlice(Pod) = %v, %v, want it passed through", other, err)
	}
}
