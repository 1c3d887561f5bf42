package rollout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// ErrStalled is wrapped by Watch's error when the rollout stalls.
var ErrStalled = errors.New("stalled")

// Watch prints the rollout of the hub RayService key, then the whole view again on every
// change of its binding that changes what is printed, until the rollout of the RayService's
// current spec is Complete (nil) or Stalled (an error wrapping ErrStalled), the binding is
// deleted, or ctx ends. A Complete or Stalled rollout of an earlier spec (the hub has not made
// a revision of the current one yet) does not end it.
func Watch(ctx context.Context, c client.WithWatch, key types.NamespacedName, w io.Writer, clk clock.PassiveClock) error {
	v, err := Read(ctx, c, key)
	if err != nil {
		return err
	}
	p := &printer{w: w, clock: clk}
	for {
		if err = p.print(v); err != nil {
			return err
		}
		var done bool
		if done, err = finished(v); done {
			return err
		}
		if v, err = nextChange(ctx, c, v.Binding); err != nil {
			return err
		}
	}
}

// printer prints views, each but the first after a blank line, skipping a view printed the
// same as the last one (the hub rewrites the binding's status for changes the view does not
// show, such as when it last saw each member).
type printer struct {
	w     io.Writer
	clock clock.PassiveClock
	last  []byte
}

func (p *printer) print(v *View) error {
	var buf bytes.Buffer
	if err := WriteStatus(&buf, v, p.clock.Now()); err != nil {
		return err
	}
	if bytes.Equal(buf.Bytes(), p.last) {
		return nil
	}
	if p.last != nil {
		fmt.Fprintln(p.w)
	}
	p.last = buf.Bytes()
	if _, err := p.w.Write(p.last); err != nil {
		return fmt.Errorf("writing the rollout of RayService %s: %w", v.Key(), err)
	}
	return nil
}

// finished says whether the watch ends: on a Complete or Stalled rollout of the current spec.
func finished(v *View) (bool, error) {
	ro := v.Rollout()
	if ro == nil || !v.TargetIsCurrent() {
		return false, nil
	}
	switch ro.Phase {
	case fleetv1alpha1.RolloutComplete:
		return true, nil
	case fleetv1alpha1.RolloutStalled:
		return true, fmt.Errorf("rollout of RayService %s to %s %w: %s", v.Key(), v.revisionLabel(ro.TargetRevision), ErrStalled, ro.Message)
	default:
		return false, nil
	}
}

// nextChange waits for the binding to change from last and reads the view around the new
// binding. A watch the API server ends (they time out) or that reports an error (the resource
// version is too old) is replaced by one from a fresh list.
func nextChange(ctx context.Context, c client.WithWatch, last *fleetv1alpha1.RayServiceBinding) (*View, error) {
	key := types.NamespacedName{Namespace: last.Namespace, Name: last.Name}
	rv := last.ResourceVersion
	for {
		b, err := watchOnce(ctx, c, key, rv, last.ResourceVersion)
		if err != nil {
			return nil, err
		}
		if b == nil {
			if b, rv, err = listOne(ctx, c, key); err != nil {
				return nil, err
			}
			if b.ResourceVersion == last.ResourceVersion {
				continue
			}
		}
		return refresh(ctx, c, key, b)
	}
}

// listOne lists the binding key alone, for its state and the list's resource version, which
// is current even when the binding has not changed for long.
func listOne(ctx context.Context, c client.Reader, key types.NamespacedName) (*fleetv1alpha1.RayServiceBinding, string, error) {
	var list fleetv1alpha1.RayServiceBindingList
	if err := c.List(ctx, &list, &client.ListOptions{Namespace: key.Namespace, FieldSelector: nameSelector(key)}); err != nil {
		return nil, "", fmt.Errorf("reading RayServiceBinding %s: %w", key, err)
	}
	if len(list.Items) == 0 {
		return nil, "", bindingGone(key)
	}
	return &list.Items[0], list.ResourceVersion, nil
}

// nameSelector selects the object named as key.
func nameSelector(key types.NamespacedName) fields.Selector {
	return fields.OneTermEqualSelector("metadata.name", key.Name)
}

// watchOnce watches the binding key from resource version rv and returns it at its first
// version other than seen; nil when the watch ended or failed first.
func watchOnce(ctx context.Context, c client.WithWatch, key types.NamespacedName, rv, seen string) (*fleetv1alpha1.RayServiceBinding, error) {
	wi, err := c.Watch(ctx, &fleetv1alpha1.RayServiceBindingList{}, &client.ListOptions{
		Namespace:     key.Namespace,
		FieldSelector: nameSelector(key),
		Raw:           &metav1.ListOptions{ResourceVersion: rv},
	})
	if err != nil {
		return nil, fmt.Errorf("watching RayServiceBinding %s: %w", key, err)
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("watching RayServiceBinding %s: %w", key, ctx.Err())
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return nil, nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if b, isBinding := ev.Object.(*fleetv1alpha1.RayServiceBinding); isBinding && b.ResourceVersion != seen {
					return b, nil
				}
			case watch.Deleted:
				return nil, bindingGone(key)
			case watch.Error:
				return nil, nil
			}
		}
	}
}

// bindingGone is the error for a binding that disappeared while watched.
func bindingGone(key types.NamespacedName) error {
	return fmt.Errorf("RayServiceBinding %s was deleted: the RayService is %w any more", key, ErrNotPlaced)
}

// refresh reads the view around a changed binding: the hub RayService again (its spec decides
// whether the rollout is the current one), the policy and the revisions.
func refresh(ctx context.Context, c client.Reader, key types.NamespacedName, b *fleetv1alpha1.RayServiceBinding) (*View, error) {
	var svc rayv1.RayService
	if err := c.Get(ctx, key, &svc); err != nil {
		return nil, fmt.Errorf("reading RayService %s: %w", key, err)
	}
	return readAround(ctx, c, &svc, b)
}
