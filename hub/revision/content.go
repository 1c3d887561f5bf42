package revision

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rayfleet/rayfleet/hub/propagation"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// etcdMaxRequestBytes is etcd's default --max-request-bytes (1.5 MiB), the largest write, and so
// the largest object, a Kubernetes cluster stores unless its etcd was configured otherwise.
const etcdMaxRequestBytes = 1536 * 1024

// metadataReserve is what a revision needs besides its data: its name, namespace, two labels,
// the owner reference, managedFields and etcd's key and request framing take under 4 KiB; the
// rest is headroom for labels or annotations added later by other tools.
const metadataReserve = 64 * 1024

// MaxContentBytes is the largest JSON encoding of a Content that New stores: a revision holds a
// whole spec in .data, and the ControllerRevision must fit in one etcd object with its
// metadata. 1,507,328 bytes (1.4375 MiB).
const MaxContentBytes = etcdMaxRequestBytes - metadataReserve

// hashPrefixLength is how much of the content hash a revision's name carries: 40 bits, so two
// contents of one RayService share a name only by a 1-in-a-trillion accident, which Ensure
// detects and refuses rather than mixing them up.
const hashPrefixLength = 10

// Content is what one revision records: the hub RayService's spec and the PlacementPolicy's
// overrides in effect. It is the JSON in a revision's .data.
type Content struct {
	// Spec is the hub RayService's spec.
	Spec rayv1.RayServiceSpec `json:"spec"`
	// Overrides are the PlacementPolicy's per-cluster patches, in the policy's order.
	Overrides []fleetv1alpha1.ClusterOverride `json:"overrides,omitempty"`
}

// TooLargeError is New's refusal of a content whose revision would not fit in one object; the
// hub reports it on the RayService rather than retrying, since only a smaller spec or fewer
// overrides help.
type TooLargeError struct {
	// Bytes is the size of the content's JSON encoding.
	Bytes int
	// Limit is MaxContentBytes.
	Limit int
}

// Error says how large the content is and how large it may be.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the RayService spec and overrides take %d bytes; a revision holds at most %d", e.Bytes, e.Limit)
}

// Hash is the content's hash: propagation's scheme (hex SHA-256 of the JSON encoding) over the
// spec and the overrides, with each override patch re-encoded canonically first. Map order
// never matters (encoding/json sorts keys), and patches that differ only in key order,
// whitespace or string escapes hash alike. Numbers keep their text: 1 and 1.0 differ, as they
// do when a patch is decoded into an integer field.
func Hash(c *Content) (string, error) {
	if c == nil {
		return "", errors.New("hashing revision content: content is nil")
	}
	canonical := Content{Spec: c.Spec}
	if len(c.Overrides) > 0 {
		canonical.Overrides = make([]fleetv1alpha1.ClusterOverride, len(c.Overrides))
	}
	for i, o := range c.Overrides {
		patch, err := canonicalJSON(o.Patch.Raw)
		if err != nil {
			return "", fmt.Errorf("hashing revision content: overrides[%d].patch: %w", i, err)
		}
		canonical.Overrides[i] = fleetv1alpha1.ClusterOverride{
			ClusterSelector: o.ClusterSelector,
			Patch:           apiextensionsv1.JSON{Raw: patch},
		}
	}
	return propagation.JSONHash("revision content", &canonical)
}

// canonicalJSON re-encodes one JSON document with sorted keys, no insignificant whitespace and
// numbers as written. An empty document stays empty (it encodes as null either way).
func canonicalJSON(raw []byte) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not valid JSON: more than one value")
	}
	return json.Marshal(v)
}

// Name is the name of the revision of rayService whose content hashes to hash:
// "<rayService>-<first 10 characters of hash>". RayServices the hub places have names of at
// most 47 characters, so names are at most 58; a longer name is cut so that the result stays a
// DNS subdomain (253 characters).
func Name(rayService, hash string) string {
	if len(hash) > hashPrefixLength {
		hash = hash[:hashPrefixLength]
	}
	if room := validation.DNS1123SubdomainMaxLength - len(hash) - 1; len(rayService) > room {
		// A cut may leave a '.' or '-' that cannot precede the '-' joining the hash.
		rayService = strings.TrimRight(rayService[:room], ".-")
	}
	return rayService + "-" + hash
}

// New is revision number of hub with content c: named by c's hash, in hub's namespace,
// controlled by hub (scheme must know rayv1), labelled with hub's name and UID. It refuses a
// content larger than MaxContentBytes with a *TooLargeError.
func New(hub *rayv1.RayService, c *Content, number int64, scheme *runtime.Scheme) (*appsv1.ControllerRevision, error) {
	cr, _, err := build(hub, c, number, scheme)
	return cr, err
}

// build is New, also returning the content's hash for Ensure.
func build(hub *rayv1.RayService, c *Content, number int64, scheme *runtime.Scheme) (*appsv1.ControllerRevision, string, error) {
	if hub == nil || c == nil {
		return nil, "", errors.New("building a revision: RayService or content is nil")
	}
	what := fmt.Sprintf("revision %d of RayService %s/%s", number, hub.Namespace, hub.Name)
	if number < 1 {
		return nil, "", fmt.Errorf("building %s: revision numbers start at 1", what)
	}
	data, err := json.Marshal(c)
	if err != nil {
		return nil, "", fmt.Errorf("building %s: encoding its content: %w", what, err)
	}
	if len(data) > MaxContentBytes {
		return nil, "", fmt.Errorf("building %s: %w", what, &TooLargeError{Bytes: len(data), Limit: MaxContentBytes})
	}
	hash, err := Hash(c)
	if err != nil {
		return nil, "", fmt.Errorf("building %s: %w", what, err)
	}
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name:      Name(hub.Name, hash),
			Namespace: hub.Namespace,
			Labels:    map[string]string{labels.OriginName: hub.Name, labels.OriginUID: string(hub.UID)},
		},
		Data:     runtime.RawExtension{Raw: data},
		Revision: number,
	}
	if err := controllerutil.SetControllerReference(hub, cr, scheme); err != nil {
		return nil, "", fmt.Errorf("building %s: %w", what, err)
	}
	return cr, hash, nil
}

// Decode is the content a revision records.
func Decode(cr *appsv1.ControllerRevision) (*Content, error) {
	if cr == nil {
		return nil, errors.New("decoding a revision: revision is nil")
	}
	if len(cr.Data.Raw) == 0 {
		return nil, fmt.Errorf("decoding revision %s/%s: it holds no data", cr.Namespace, cr.Name)
	}
	var c Content
	if err := json.Unmarshal(cr.Data.Raw, &c); err != nil {
		return nil, fmt.Errorf("decoding revision %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return &c, nil
}
