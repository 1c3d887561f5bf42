package propagation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	sigsjson "sigs.k8s.io/json"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// MemberRayService builds the RayService the hub named hubName server-side-applies to the
// member cluster named cluster, whose MemberCluster labels are clusterLabels. It has the hub object's
// namespace and name and its spec with the overrides that select the cluster applied in order
// as JSON merge patches (RFC 7386); the user's labels and annotations except kubectl's
// last-applied configuration and fleet keys; the origin labels; and the spec-hash annotation of
// the resulting spec. TypeMeta is set because apply needs it; status and the server-owned
// metadata (managedFields, resourceVersion, owner references, finalizers) are left empty.
//
// The cluster name is only used to name the cluster in errors. An override that cannot be
// applied (no or invalid selector, a patch that is not a JSON object, a patch whose result does
// not decode as a RayService spec, including fields the type does not have) is an error naming
// the override's index and the cluster: a typo'd field would otherwise be dropped silently.
func MemberRayService(hubName string, hub *rayv1.RayService, cluster string, clusterLabels map[string]string,
	overrides []fleetv1alpha1.ClusterOverride,
) (*rayv1.RayService, error) {
	if hub == nil {
		return nil, errors.New("building member RayService: hub RayService is nil")
	}
	spec, err := specForCluster(&hub.Spec, clusterLabels, overrides)
	if err != nil {
		return nil, fmt.Errorf("RayService %s/%s on cluster %q: %w", hub.Namespace, hub.Name, cluster, err)
	}
	hash, err := SpecHash(spec)
	if err != nil {
		return nil, fmt.Errorf("RayService %s/%s on cluster %q: %w", hub.Namespace, hub.Name, cluster, err)
	}
	memberLabels := userKeys(hub.Labels)
	memberLabels[labels.OriginNamespace] = hub.Namespace
	memberLabels[labels.OriginName] = hub.Name
	memberLabels[labels.OriginUID] = string(hub.UID)
	memberLabels[labels.OriginHub] = hubName
	annotations := userKeys(hub.Annotations)
	delete(annotations, corev1.LastAppliedConfigAnnotation)
	annotations[labels.SpecHash] = hash
	return &rayv1.RayService{
		TypeMeta: metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayService"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   hub.Namespace,
			Name:        hub.Name,
			Labels:      memberLabels,
			Annotations: annotations,
		},
		Spec: *spec,
	}, nil
}

// userKeys copies the keys of a label or annotation map that are not the fleet API's.
func userKeys(in map[string]string) map[string]string {
	out := make(map[string]string, len(in)+3)
	for k, v := range in {
		if !strings.HasPrefix(k, labels.FleetKeyPrefix) {
			out[k] = v
		}
	}
	return out
}

// specForCluster returns a copy of spec with the overrides selecting clusterLabels applied in
// order. Every override's selector and patch shape are checked, matching or not, so a broken
// policy is reported on every cluster rather than only where it happens to match.
func specForCluster(spec *rayv1.RayServiceSpec, clusterLabels map[string]string,
	overrides []fleetv1alpha1.ClusterOverride,
) (*rayv1.RayServiceSpec, error) {
	out := spec.DeepCopy()
	var doc []byte
	for i := range overrides {
		o := &overrides[i]
		patch, err := patchObject(o.Patch.Raw)
		if err != nil {
			return nil, fmt.Errorf("override %d: %w", i, err)
		}
		matches, err := selects(o.ClusterSelector, clusterLabels)
		if err != nil {
			return nil, fmt.Errorf("override %d: %w", i, err)
		}
		if !matches {
			continue
		}
		if doc == nil {
			if doc, err = json.Marshal(out); err != nil {
				return nil, fmt.Errorf("encoding spec: %w", err)
			}
		}
		if doc, err = jsonpatch.MergePatch(doc, patch); err != nil {
			return nil, fmt.Errorf("override %d: applying merge patch: %w", i, err)
		}
		// Decoding after every patch names the override that broke the spec, not a later one.
		out = &rayv1.RayServiceSpec{}
		if err = decodeSpec(doc, out); err != nil {
			return nil, fmt.Errorf("override %d: %w", i, err)
		}
	}
	return out, nil
}

// selects reports whether selector matches the cluster's labels. An absent selector is an
// error rather than "everything" or "nothing": the API requires one, so a Go caller that
// leaves it out has a bug worth surfacing.
func selects(selector *metav1.LabelSelector, clusterLabels map[string]string) (bool, error) {
	if selector == nil {
		return false, errors.New("clusterSelector is required")
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return false, fmt.Errorf("invalid clusterSelector: %w", err)
	}
	return sel.Matches(k8slabels.Set(clusterLabels)), nil
}

// patchObject returns the patch trimmed, or an error if it is not a JSON object. RFC 7386 lets a
// non-object patch replace the whole document; for a spec that is never what an override means.
func patchObject(raw []byte) ([]byte, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, errors.New("patch must be a valid JSON object")
	}
	return trimmed, nil
}

// decodeSpec decodes a patched spec the way the API server decodes a request: field names are
// case-sensitive, and unknown or duplicate fields are errors.
func decodeSpec(doc []byte, spec *rayv1.RayServiceSpec) error {
	strictErrs, err := sigsjson.UnmarshalStrict(doc, spec)
	if err != nil {
		return fmt.Errorf("patched spec is not a valid RayService spec: %w", err)
	}
	if len(strictErrs) > 0 {
		return fmt.Errorf("patched spec is not a valid RayService spec: %w", errors.Join(strictErrs...))
	}
	return nil
}

// CheckOverrides returns why the hub could not use an override on some cluster, nil when it
// could use them all: every selector must parse, and every patch, applied alone to an empty
// spec, must leave a valid RayService spec (a misspelt field or a wrong type fails here).
func CheckOverrides(overrides []fleetv1alpha1.ClusterOverride) error {
	for i := range overrides {
		o := &overrides[i]
		if _, err := selects(o.ClusterSelector, nil); err != nil {
			return fmt.Errorf("override %d: %w", i, err)
		}
		patch, err := patchObject(o.Patch.Raw)
		if err != nil {
			return fmt.Errorf("override %d: %w", i, err)
		}
		doc, err := jsonpatch.MergePatch([]byte("{}"), patch)
		if err != nil {
			return fmt.Errorf("override %d: applying merge patch: %w", i, err)
		}
		if err := decodeSpec(doc, &rayv1.RayServiceSpec{}); err != nil {
			return fmt.Errorf("override %d: %w", i, err)
		}
	}
	return nil
}
