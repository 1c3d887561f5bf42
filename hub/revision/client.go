package revision

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// The hub lists and watches the revisions of its RayServices, creates new ones and prunes old
// ones; it never updates one (a revision's data is immutable, and a reused revision keeps its
// number).
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;delete

// List is hub's revisions, oldest first: those in its namespace labelled with its name and
// controlled by its UID. A revision left by a deleted RayService of the same name is not one of
// them, and the garbage collector removes it.
func List(ctx context.Context, c client.Reader, hub *rayv1.RayService) ([]appsv1.ControllerRevision, error) {
	return list(ctx, c, hub, client.MatchingLabels{labels.OriginName: hub.Name})
}

// OriginIndex is a cache field index of ControllerRevisions by their origin-name label, which
// IndexOrigin computes. A label selector makes the cache test every revision of the namespace;
// with 10,000 RayServices in one namespace that was half the hub's CPU.
const OriginIndex = "rayfleet.io/revision-origin"

// IndexOrigin is OriginIndex's function.
func IndexOrigin(obj client.Object) []string {
	if name := obj.GetLabels()[labels.OriginName]; name != "" {
		return []string{name}
	}
	return nil
}

// ListIndexed is List through a cache that has OriginIndex.
func ListIndexed(ctx context.Context, c client.Reader, hub *rayv1.RayService) ([]appsv1.ControllerRevision, error) {
	return list(ctx, c, hub, client.MatchingFields{OriginIndex: hub.Name})
}

func list(ctx context.Context, c client.Reader, hub *rayv1.RayService, match client.ListOption) ([]appsv1.ControllerRevision, error) {
	if err := checkHub(hub); err != nil {
		return nil, fmt.Errorf("listing revisions: %w", err)
	}
	var list appsv1.ControllerRevisionList
	if err := c.List(ctx, &list, client.InNamespace(hub.Namespace), match); err != nil {
		return nil, fmt.Errorf("listing revisions of RayService %s/%s: %w", hub.Namespace, hub.Name, err)
	}
	var owned []appsv1.ControllerRevision
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], hub) {
			owned = append(owned, list.Items[i])
		}
	}
	return NewHistory(owned), nil
}

// Ensure is hub's revision of content: the one in history with content's hash if there is one,
// reused as it is even when older revisions follow it (going back to an earlier spec returns to
// its revision, as `kubectl rollout undo` does), else a new one numbered after the highest in
// history. created says whether it was created now; a revision found in history is returned
// as history's own element. When the name is taken already (history came from a cache that
// had not seen it yet), the revision is read back instead. It fails with New's *TooLargeError
// for a content that does not fit.
func Ensure(ctx context.Context, c client.Client, hub *rayv1.RayService, content *Content,
	history History) (*appsv1.ControllerRevision, bool, error) {
	if err := checkHub(hub); err != nil {
		return nil, false, fmt.Errorf("ensuring a revision: %w", err)
	}
	want, hash, err := build(hub, content, history.NextNumber(), c.Scheme())
	if err != nil {
		return nil, false, err
	}
	if existing := history.Get(want.Name); existing != nil {
		if err = sameContent(existing, want, hash); err != nil {
			return nil, false, err
		}
		return existing, false, nil
	}
	err = c.Create(ctx, want)
	switch {
	case err == nil:
		return want, true, nil
	case apierrors.IsAlreadyExists(err):
		got, readErr := readBack(ctx, c, hub, want, hash)
		return got, false, readErr
	default:
		return nil, false, fmt.Errorf("creating revision %s/%s of RayService %s: %w", want.Namespace, want.Name, hub.Name, err)
	}
}

// readBack is the revision named like want that Ensure found existing on create, provided hub
// controls it and it records want's content.
func readBack(ctx context.Context, c client.Reader, hub *rayv1.RayService, want *appsv1.ControllerRevision,
	hash string) (*appsv1.ControllerRevision, error) {
	got := &appsv1.ControllerRevision{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
		return nil, fmt.Errorf("reading revision %s/%s of RayService %s, which exists already: %w",
			want.Namespace, want.Name, hub.Name, err)
	}
	if !metav1.IsControlledBy(got, hub) {
		return nil, fmt.Errorf("revision %s/%s exists but is not controlled by RayService %s (uid %s); "+
			"one left by a deleted RayService of that name goes once the garbage collector removes it",
			got.Namespace, got.Name, hub.Name, hub.UID)
	}
	if err := sameContent(got, want, hash); err != nil {
		return nil, err
	}
	return got, nil
}

// sameContent fails unless existing, a revision named like want, records want's content. The
// name carries only 40 bits of the hash; two contents sharing them must not share a revision.
func sameContent(existing, want *appsv1.ControllerRevision, hash string) error {
	if bytes.Equal(existing.Data.Raw, want.Data.Raw) {
		return nil
	}
	// The bytes differ when a patch was written differently or the API server re-encoded the
	// data; the hash tells whether the content does.
	c, err := Decode(existing)
	if err != nil {
		return err
	}
	got, err := Hash(c)
	if err != nil {
		return fmt.Errorf("hashing revision %s/%s: %w", existing.Namespace, existing.Name, err)
	}
	if got != hash {
		return fmt.Errorf("revision %s/%s records another content whose hash starts alike (%s, want %s); "+
			"delete it to record this one", existing.Namespace, existing.Name, got, hash)
	}
	return nil
}

// Delete deletes the named revisions of history, each only if it is still the object history
// read (a UID precondition). A revision gone already, or replaced by a newer object of the same
// name, is left alone without error: the one meant is gone either way. A name not in history
// is an error, since only a revision read as hub's may be deleted.
func Delete(ctx context.Context, c client.Writer, history History, names []string) error {
	var errs []error
	for _, name := range names {
		cr := history.Get(name)
		if cr == nil {
			errs = append(errs, fmt.Errorf("deleting revision %s: not in the history read", name))
			continue
		}
		uid := cr.UID
		err := c.Delete(ctx, cr.DeepCopy(), client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting revision %s/%s: %w", cr.Namespace, cr.Name, err))
		}
	}
	return errors.Join(errs...)
}

// checkHub refuses a RayService that cannot own revisions: one not read from the API server
// has no UID to match controller references with.
func checkHub(hub *rayv1.RayService) error {
	if hub == nil {
		return errors.New("RayService is nil")
	}
	if hub.UID == "" {
		return fmt.Errorf("RayService %s/%s has no UID", hub.Namespace, hub.Name)
	}
	return nil
}
