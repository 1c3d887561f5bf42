package rollout

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
// change of its binding or of the RayService that changes what is printed, until the rollout of the RayService's
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
		if v, err = nextChange(ctx, c, v); err != nil {
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

// nextChange waits for the binding or the hub RayService to change from last and reads the
// view around them. The RayService is watched too because the hub writes its status (the
// TrafficShifting condition) after the binding's, so a view read on the binding's change alone
// can show the condition from before. A watch the API server ends (they time out) or that
// reports an error (the resource version is too old) is replaced by one from a fresh list.
func nextChange(ctx context.Context, c client.WithWatch, last *View) (*View, error) {
	key := last.Key()
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	type change struct {
		obj client.Object
		err error
	}
	// Buffered for both, so the watch that loses the race ends without a reader.
	changes := make(chan change, 2)
	for _, w := range []watched{bindingWatched(key, last.Binding), serviceWatched(key, last.Service)} {
		go func() {
			obj, err := w.next(watchCtx, c)
			changes <- change{obj, err}
		}()
	}
	ch := <-changes
	if ch.err != nil {
		return nil, ch.err
	}
	switch obj := ch.obj.(type) {
	case *fleetv1alpha1.RayServiceBinding:
		return refresh(ctx, c, key, obj)
	case *rayv1.RayService:
		var b fleetv1alpha1.RayServiceBinding
		if err := c.Get(ctx, key, &b); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, bindingGone(key)
			}
			return nil, fmt.Errorf("reading RayServiceBinding %s: %w", key, err)
		}
		return readAround(ctx, c, obj, &b)
	default:
		return nil, fmt.Errorf("watching RayService %s: unexpected %T", key, ch.obj)
	}
}

// watched is one object a watch follows, from the version last seen.
type watched struct {
	key  types.NamespacedName
	kind string
	// seen is the resource version last seen.
	seen string
	// newList makes an empty list of the object's kind.
	newList func() client.ObjectList
	// gone is the error for the object deleted.
	gone error
}

// bindingWatched follows binding b.
func bindingWatched(key types.NamespacedName, b *fleetv1alpha1.RayServiceBinding) watched {
	return watched{key: key, kind: "RayServiceBinding", seen: b.ResourceVersion, gone: bindingGone(key),
		newList: func() client.ObjectList { return &fleetv1alpha1.RayServiceBindingList{} }}
}

// serviceWatched follows the hub RayService svc.
func serviceWatched(key types.NamespacedName, svc *rayv1.RayService) watched {
	return watched{key: key, kind: "RayService", seen: svc.ResourceVersion,
		gone:    fmt.Errorf("RayService %s was deleted from the hub: it is %w any more", key, ErrNotPlaced),
		newList: func() client.ObjectList { return &rayv1.RayServiceList{} }}
}

// next waits for the object to change from the version seen and returns it.
func (w watched) next(ctx context.Context, c client.WithWatch) (client.Object, error) {
	rv := w.seen
	for {
		obj, err := w.watchOnce(ctx, c, rv)
		if err != nil {
			return nil, err
		}
		if obj != nil {
			return obj, nil
		}
		if obj, rv, err = w.listOne(ctx, c); err != nil {
			return nil, err
		}
		if obj.GetResourceVersion() != w.seen {
			return obj, nil
		}
	}
}

// listOne lists the object alone, for its state and the list's resource version, which is
// current even when the object has not changed for long.
func (w watched) listOne(ctx context.Context, c client.Reader) (client.Object, string, error) {
	list := w.newList()
	if err := c.List(ctx, list, &client.ListOptions{Namespace: w.key.Namespace, FieldSelector: nameSelector(w.key)}); err != nil {
		return nil, "", fmt.Errorf("reading %s %s: %w", w.kind, w.key, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, "", fmt.Errorf("reading %s %s: %w", w.kind, w.key, err)
	}
	if len(items) == 0 {
		return nil, "", w.gone
	}
	obj, ok := items[0].(client.Object)
	if !ok {
		return nil, "", fmt.Errorf("reading %s %s: unexpected %T", w.kind, w.key, items[0])
	}
	return obj, list.GetResourceVersion(), nil
}

// nameSelector selects the object named as key.
func nameSelector(key types.NamespacedName) fields.Selector {
	return fields.OneTermEqualSelector("metadata.name", key.Name)
}

// watchOnce watches the object from resource version rv and returns it at its first version
// other than the one seen; nil when the watch ended or failed first.
func (w watched) watchOnce(ctx context.Context, c client.WithWatch, rv string) (client.Object, error) {
	wi, err := c.Watch(ctx, w.newList(), &client.ListOptions{
		Namespace:     w.key.Namespace,
		FieldSelector: nameSelector(w.key),
		Raw:           &metav1.ListOptions{ResourceVersion: rv},
	})
	if err != nil {
		return nil, fmt.Errorf("watching %s %s: %w", w.kind, w.key, err)
	}
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("watching %s %s: %w", w.kind, w.key, ctx.Err())
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return nil, nil
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				if obj, isObject := ev.Object.(client.Object); isObject && obj.GetResourceVersion() != w.seen {
					return obj, nil
				}
			case watch.Deleted:
				return nil, w.gone
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
