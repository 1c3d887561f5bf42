package membership

import (
	"slices"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func TestToAdopt(t *testing.T) {
	now := metav1.Now()
	ns := func(name string, lbls map[string]string) corev1.Namespace {
		return corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
	}
	copyIn := func(namespace, hub string) rayv1.RayService {
		return rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "svc", Labels: map[string]string{labels.OriginHub: hub}}}
	}
	terminating := ns("going", nil)
	terminating.DeletionTimestamp = &now
	namespaces := []corev1.Namespace{
		ns("old", map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}),
		ns("created", map[string]string{labels.HubNamespace: labels.HubNamespaceCreated}),
		ns("refused", map[string]string{labels.HubNamespace: "no"}),
		ns("theirs", nil), ns("empty", nil), terminating,
	}
	tests := []struct {
		name   string
		copies []rayv1.RayService
		want   []string
	}{
		{name: "no copies"},
		{name: "an unlabelled namespace holding copies", copies: []rayv1.RayService{copyIn("old", "rayfleet"), copyIn("old", "rayfleet")}, want: []string{"old"}},
		{name: "labelled namespaces, whatever the value", copies: []rayv1.RayService{copyIn("created", "rayfleet"), copyIn("refused", "rayfleet")}},
		{name: "another hub's copies", copies: []rayv1.RayService{copyIn("theirs", "other")}},
		{name: "a namespace being deleted", copies: []rayv1.RayService{copyIn("going", "rayfleet")}},
		{name: "a namespace not listed", copies: []rayv1.RayService{copyIn("missing", "rayfleet")}},
		{name: "sorted", copies: []rayv1.RayService{copyIn("theirs", "rayfleet"), copyIn("old", "rayfleet")}, want: []string{"old", "theirs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := toAdopt("rayfleet", namespaces, tt.copies); !slices.Equal(got, tt.want) {
				t.Errorf("toAdopt = %v, want %v", got, tt.want)
			}
		})
	}
}
