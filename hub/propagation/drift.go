package propagation

import (
	"encoding/json"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/jsonsubset"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// Drifted reports whether applying desired (built by MemberRayService) to the member would
// change member: a spec field desired sets has another value on the member, a label or
// annotation desired sets is missing or different, or a label or annotation the hub applied
// earlier (per the member's managedFields) is no longer desired. A nil member has drifted.
//
// The spec comparison is "desired is contained in member", not equality, because the member's
// API server adds CRD defaults (a container port's protocol, say) and other writers may add
// fields the hub does not set; a server-side apply would change neither, so counting them
// would re-apply forever. Lists must match in length, element by element, because most lists
// of a RayService are atomic to server-side apply. Status, managedFields (other than as the
// record of what the hub owns), resourceVersion and the rest of the metadata never count.
func Drifted(desired, member *rayv1.RayService) bool {
	if member == nil {
		return true
	}
	if desired == nil {
		return false
	}
	return metadataDrifted(desired, member) || !specContained(&desired.Spec, &member.Spec)
}

// DriftedCovered is Drifted for a copy read without its spec (TrimCopy): its labels and
// annotations are compared as Drifted compares them, its spec by covered, the SpecHash of the
// desired spec it was last seen to contain at its current generation (Covered), against
// desiredDigest, the SpecHash of desired's spec.
func DriftedCovered(desired, member *rayv1.RayService, desiredDigest, covered string) bool {
	if member == nil {
		return true
	}
	if desired == nil {
		return false
	}
	return metadataDrifted(desired, member) || desiredDigest != covered
}

// metadataDrifted reports whether a label or annotation desired sets is missing or different
// on member, or one the hub applied earlier is no longer desired.
func metadataDrifted(desired, member *rayv1.RayService) bool {
	return !keysContained(desired.Labels, member.Labels) || !keysContained(desired.Annotations, member.Annotations) ||
		hubOwnedKeysDropped(desired, member)
}

// keysContained reports whether every key of want is in have with the same value.
func keysContained(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// hubOwnedKeysDropped reports whether the member carries a label or annotation that the hub
// applied earlier and no longer wants: applying again removes it, so it is drift. Keys are
// read from the managedFields entries of the hub's field manager; a member without them (not
// written by apply) has nothing to report here.
func hubOwnedKeysDropped(desired, member *rayv1.RayService) bool {
	for i := range member.ManagedFields {
		mf := &member.ManagedFields[i]
		if mf.Manager != labels.HubFieldManager || mf.Operation != metav1.ManagedFieldsOperationApply || mf.FieldsV1 == nil {
			continue
		}
		var owned struct {
			Metadata struct {
				Labels      map[string]json.RawMessage `json:"f:labels"`
				Annotations map[string]json.RawMessage `json:"f:annotations"`
			} `json:"f:metadata"`
		}
		// Unreadable field sets are the server's business, not drift: skip them.
		if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &owned); err != nil {
			continue
		}
		if ownedKeyMissing(owned.Metadata.Labels, desired.Labels, member.Labels) ||
			ownedKeyMissing(owned.Metadata.Annotations, desired.Annotations, member.Annotations) {
			return true
		}
	}
	return false
}

// ownedKeyMissing reports whether a key in the field set ("f:<key>") is still on the member but
// not desired.
func ownedKeyMissing(fieldSet map[string]json.RawMessage, desired, member map[string]string) bool {
	for f := range fieldSet {
		k, ok := strings.CutPrefix(f, "f:")
		if !ok {
			continue
		}
		if _, want := desired[k]; want {
			continue
		}
		if _, has := member[k]; has {
			return true
		}
	}
	return false
}

// specContained reports whether every field desired sets has the same value in member,
// comparing the JSON forms that apply sends and the server stores. A spec that cannot be
// encoded is not contained: re-applying is the safe answer.
func specContained(desired, member *rayv1.RayServiceSpec) bool {
	return jsonsubset.Covers(member, desired)
}
