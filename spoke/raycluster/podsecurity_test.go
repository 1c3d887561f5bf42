package raycluster

import (
	"context"
	"errors"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestHubPlaced(t *testing.T) {
	placedRS := raybuilder.MakeRayService("svc", "ns").Obj()
	placedRS.UID = "rs-uid"
	placedRS.Labels = map[string]string{labels.OriginNamespace: "team", labels.OriginName: "svc"}
	placedRS.Status.PendingServiceStatus.RayClusterName = "svc-named"
	localRS := placedRS.DeepCopy()
	localRS.Name, localRS.UID, localRS.Labels = "local", "local-uid", nil
	ownedBy := func(rs *rayv1.RayService, uid types.UID) []metav1.OwnerReference {
		ref := metav1.NewControllerRef(rs, rayv1.GroupVersion.WithKind("RayService"))
		ref.UID = uid
		return []metav1.OwnerReference{*ref}
	}
	tests := []struct {
		name    string
		cluster *rayv1.RayCluster
		listErr error
		want    bool
		wantErr bool
	}{
		{name: "no origin, no owner", cluster: raybuilder.MakeRayCluster("rc", "ns").Obj()},
		{
			name:    "origin labels on the cluster",
			cluster: raybuilder.MakeRayCluster("rc", "ns").Label(labels.OriginNamespace, "team").Label(labels.OriginName, "svc").Obj(),
			want:    true,
		},
		{
			name:    "labels stripped, but controlled by a hub-placed RayService",
			cluster: withOwners(raybuilder.MakeRayCluster("svc-abcde", "ns").Obj(), ownedBy(placedRS, "rs-uid")),
			want:    true,
		},
		{
			name:    "labels and owner stripped, but named in a hub-placed RayService's status",
			cluster: raybuilder.MakeRayCluster("svc-named", "ns").Obj(),
			want:    true,
		},
		{
			name:    "controlled by a RayService the hub did not place",
			cluster: withOwners(raybuilder.MakeRayCluster("local-abcde", "ns").Obj(), ownedBy(localRS, "local-uid")),
		},
		{
			name:    "controlled by an earlier RayService of that name",
			cluster: withOwners(raybuilder.MakeRayCluster("svc-abcde", "ns").Obj(), ownedBy(placedRS, "old-uid")),
		},
		{
			name:    "RayServices cannot be listed",
			cluster: withOwners(raybuilder.MakeRayCluster("svc-abcde", "ns").Obj(), ownedBy(placedRS, "rs-uid")),
			listErr: errAPI,
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _, _ := newTestReconciler(t, interceptor.Funcs{
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if tt.listErr != nil {
						return tt.listErr
					}
					return c.List(ctx, list, opts...)
				},
			}, placedRS, localRS)
			got, err := r.hubPlaced(context.Background(), tt.cluster)
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, errAPI)) {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("hubPlaced = %v, want %v", got, tt.want)
			}
		})
	}
}

func withOwners(rc *rayv1.RayCluster, refs []metav1.OwnerReference) *rayv1.RayCluster {
	rc.OwnerReferences = refs
	return rc
}
