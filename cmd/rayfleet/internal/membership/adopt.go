package membership

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// toAdopt are the namespaces, sorted, that hold a copy of hub (a RayService labelled
// labels.OriginHub=hub) and carry no labels.HubNamespace: an earlier hub created them
// before it labelled the namespaces it creates, and the member's guard would refuse the
// hub's next write there. A namespace being deleted is left alone; so is one whose label an
// admin set to anything, which is the admin's word.
func toAdopt(hub string, namespaces []corev1.Namespace, copies []rayv1.RayService) []string {
	byName := make(map[string]*corev1.Namespace, len(namespaces))
	for i := range namespaces {
		byName[namespaces[i].Name] = &namespaces[i]
	}
	var out []string
	for _, c := range copies {
		if c.Labels[labels.OriginHub] != hub {
			continue
		}
		ns, ok := byName[c.Namespace]
		if !ok || !ns.DeletionTimestamp.IsZero() {
			continue
		}
		if _, labelled := ns.Labels[labels.HubNamespace]; labelled {
			continue
		}
		out = append(out, ns.Name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// adoptNamespaces labels labels.HubNamespaceAllowed the namespaces toAdopt finds on the
// member and returns them. A member without the RayService CRD holds no copies.
func adoptNamespaces(ctx context.Context, c client.Client, hub string) ([]string, error) {
	var copies rayv1.RayServiceList
	if err := c.List(ctx, &copies, client.HasLabels{labels.OriginHub}); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing the hub's RayServices: %w", err)
	}
	if len(copies.Items) == 0 {
		return nil, nil
	}
	var namespaces corev1.NamespaceList
	if err := c.List(ctx, &namespaces); err != nil {
		return nil, fmt.Errorf("listing namespaces: %w", err)
	}
	adopt := toAdopt(hub, namespaces.Items, copies.Items)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{labels.HubNamespace: labels.HubNamespaceAllowed}}})
	if err != nil {
		return nil, err
	}
	for _, name := range adopt {
		ns := &corev1.Namespace{}
		ns.Name = name
		if err := c.Patch(ctx, ns, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return nil, fmt.Errorf("labelling namespace %s %s=%s: %w", name, labels.HubNamespace, labels.HubNamespaceAllowed, err)
		}
	}
	return adopt, nil
}
