package simmembers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// scope tells namespaced kinds from cluster-scoped ones, as the member's client does. The
// answers are remembered by kind: a REST mapping lookup on every call would cost the hub's
// reconciles a tenth of their CPU, which is the simulation's, not the hub's.
type scope struct {
	scheme *runtime.Scheme
	mapper meta.RESTMapper
	known  *sync.Map // schema.GroupVersionKind -> bool
}

func newScope(scheme *runtime.Scheme, mapper meta.RESTMapper) scope {
	return scope{scheme: scheme, mapper: mapper, known: &sync.Map{}}
}

// namespaced reports whether obj's kind is namespaced; a list answers for its items.
func (s scope) namespaced(obj runtime.Object) (bool, error) {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return false, err
	}
	if meta.IsListType(obj) {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	return s.gvkNamespaced(gvk)
}

// gvkNamespaced reports whether kind gvk is namespaced.
func (s scope) gvkNamespaced(gvk schema.GroupVersionKind) (bool, error) {
	if v, ok := s.known.Load(gvk); ok {
		return v.(bool), nil
	}
	namespaced, err := apiutil.IsGVKNamespaced(gvk, s.mapper)
	if err != nil {
		return false, err
	}
	s.known.Store(gvk, namespaced)
	return namespaced, nil
}

// reader maps a member's reads (from its cache or straight from the API server).
type reader struct {
	m     member
	scope scope
	r     client.Reader
	// namespaces are the member's namespaces, where a list over all namespaces looks when the
	// backing server cannot select the member's objects itself (DeleteAllOf).
	namespaces []string
	// cached readers (the cache, the client's reads) know only namespaces: a read elsewhere is
	// an error rather than a NotFound the hub would act on.
	cached bool
}

// checkNamespace refuses a cached read of a namespace the member's cache does not hold.
func (r *reader) checkNamespace(ns string, namespaced bool) error {
	if !r.cached || !namespaced || ns == "" || slices.Contains(r.namespaces, ns) {
		return nil
	}
	return fmt.Errorf("simulated member %s caches namespaces %v only, not %s (simhub --sim-namespaces)", r.m.name, r.namespaces, ns)
}

// Get reads the member's object under key.
func (r *reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	namespaced, err := r.scope.namespaced(obj)
	if err != nil {
		return err
	}
	if err := r.checkNamespace(key.Namespace, namespaced); err != nil {
		return err
	}
	if err := r.r.Get(ctx, r.m.outKey(key, namespaced), obj, opts...); err != nil {
		return r.m.inError(err)
	}
	if !r.m.inObject(obj, namespaced) {
		return apierrors.NewNotFound(schemaResource(obj), key.Name)
	}
	return nil
}

// List lists the member's objects: in one of its namespaces, in all of them, or for a
// cluster-scoped kind those labelled with its name; selectors on metadata.namespace and
// metadata.name are mapped.
func (r *reader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	namespaced, err := r.scope.namespaced(list)
	if err != nil {
		return err
	}
	lo := client.ListOptions{}
	lo.ApplyOptions(opts)
	if err := r.checkNamespace(lo.Namespace, namespaced); err != nil {
		return err
	}
	if err := r.m.outListOptions(&lo, namespaced); err != nil {
		return err
	}
	if err := r.r.List(ctx, list, &lo); err != nil {
		return r.m.inError(err)
	}
	return r.m.inList(list, namespaced)
}

// schemaResource names obj's kind in a NotFound error.
func schemaResource(obj client.Object) schema.GroupResource {
	gvk := obj.GetObjectKind().GroupVersionKind()
	return schema.GroupResource{Group: gvk.Group, Resource: strings.ToLower(gvk.Kind)}
}

// outListOptions maps the namespace and field selector of a list, and selects a cluster-scoped
// kind's objects by MemberLabel.
func (m member) outListOptions(lo *client.ListOptions, namespaced bool) error {
	if namespaced {
		lo.Namespace = m.out(lo.Namespace)
	} else {
		req, err := labels.NewRequirement(MemberLabel, selection.Equals, []string{m.name})
		if err != nil {
			return err
		}
		sel := lo.LabelSelector
		if sel == nil {
			sel = labels.Everything()
		}
		lo.LabelSelector = sel.Add(*req)
	}
	if lo.FieldSelector == nil {
		return nil
	}
	fs, err := lo.FieldSelector.Transform(func(field, value string) (string, string, error) {
		if field == "metadata.namespace" || (field == "metadata.name" && !namespaced) {
			return field, m.out(value), nil
		}
		return field, value, nil
	})
	if err != nil {
		return fmt.Errorf("simulated member %s: mapping field selector: %w", m.name, err)
	}
	lo.FieldSelector = fs
	return nil
}

// inList keeps the member's items of list, in the member's names.
func (m member) inList(list client.ObjectList, namespaced bool) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, item := range items {
		obj, ok := item.(client.Object)
		if ok && m.inObject(obj, namespaced) {
			kept = append(kept, obj)
		}
	}
	if len(kept) == len(items) {
		return nil
	}
	return meta.SetList(list, kept)
}

// inError rewrites the backing names in an API error's message and details into the member's.
func (m member) inError(err error) error {
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		return err
	}
	st := se.ErrStatus
	st.Message = strings.ReplaceAll(st.Message, m.prefix, "")
	if st.Details != nil {
		d := *st.Details
		if name, ok := m.in(d.Name); ok {
			d.Name = name
		}
		st.Details = &d
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// mappingClient is a member's client: reads through the member's cache, writes to the backing
// server, names mapped both ways.
type mappingClient struct {
	reader
	c client.Client
}

var _ client.Client = &mappingClient{}

// write maps obj out, runs do on it, and maps obj (as the server answered) back in, whatever
// the outcome.
func (c *mappingClient) write(obj client.Object, do func(namespaced bool) error) error {
	namespaced, err := c.scope.namespaced(obj)
	if err != nil {
		return err
	}
	c.m.outObject(obj, namespaced)
	err = do(namespaced)
	c.m.inObject(obj, namespaced)
	return c.m.inError(err)
}

// Create creates obj on the member.
func (c *mappingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return c.write(obj, func(bool) error { return c.c.Create(ctx, obj, opts...) })
}

// Update updates obj on the member.
func (c *mappingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return c.write(obj, func(bool) error { return c.c.Update(ctx, obj, opts...) })
}

// Delete deletes obj from the member (preconditions and propagation as given).
func (c *mappingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return c.write(obj, func(bool) error { return c.c.Delete(ctx, obj, opts...) })
}

// Patch patches obj on the member; the patch is computed on the member's view of obj and its
// names are mapped.
func (c *mappingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	raw, err := c.m.outRawPatch(c.scope, obj, patch)
	if err != nil {
		return err
	}
	return c.write(obj, func(bool) error { return c.c.Patch(ctx, obj, raw, opts...) })
}

// outRawPatch computes patch's data on the member's view of obj and maps it.
func (m member) outRawPatch(s scope, obj client.Object, patch client.Patch) (client.Patch, error) {
	namespaced, err := s.namespaced(obj)
	if err != nil {
		return nil, err
	}
	data, err := patch.Data(obj)
	if err != nil {
		return nil, err
	}
	if data, err = m.outPatch(patch.Type(), data, namespaced); err != nil {
		return nil, err
	}
	return client.RawPatch(patch.Type(), data), nil
}

// Apply server-side applies obj to the member. An unstructured apply configuration
// (client.ApplyConfigurationFromUnstructured, as the hub writes its copies) is mapped in place
// and receives the object as stored; a typed one goes through its JSON.
func (c *mappingClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return c.m.apply(obj, func(ac runtime.ApplyConfiguration) error { return c.c.Apply(ctx, ac, opts...) },
		func(u *unstructured.Unstructured) (bool, error) { return c.scope.namespaced(u) })
}

// apply maps an apply configuration out, calls do with it, and maps the answer back in.
func (m member) apply(obj runtime.ApplyConfiguration, do func(runtime.ApplyConfiguration) error,
	namespaced func(*unstructured.Unstructured) (bool, error)) error {
	if u, ok := obj.(interface{ UnstructuredContent() map[string]any }); ok {
		if o, isObj := obj.(client.Object); isObj {
			ns, err := namespaced(&unstructured.Unstructured{Object: u.UnstructuredContent()})
			if err != nil {
				return err
			}
			m.outObject(o, ns)
			err = do(obj)
			m.inObject(o, ns)
			return m.inError(err)
		}
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("simulated member %s: encoding apply configuration: %w", m.name, err)
	}
	u := &unstructured.Unstructured{}
	if err = u.UnmarshalJSON(data); err != nil {
		return fmt.Errorf("simulated member %s: decoding apply configuration: %w", m.name, err)
	}
	ns, err := namespaced(u)
	if err != nil {
		return err
	}
	m.outObject(u, ns)
	if err = do(client.ApplyConfigurationFromUnstructured(u)); err != nil {
		return m.inError(err)
	}
	m.inObject(u, ns)
	if data, err = u.MarshalJSON(); err != nil {
		return err
	}
	return json.Unmarshal(data, obj)
}

// DeleteAllOf deletes the member's objects of obj's kind: in one namespace, in each of its
// namespaces, or (cluster-scoped) those labelled with its name.
func (c *mappingClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	namespaced, err := c.scope.namespaced(obj)
	if err != nil {
		return err
	}
	do := client.DeleteAllOfOptions{}
	do.ApplyOptions(opts)
	if !namespaced || do.Namespace != "" {
		if err := c.m.outListOptions(&do.ListOptions, namespaced); err != nil {
			return err
		}
		return c.m.inError(c.c.DeleteAllOf(ctx, obj, &do))
	}
	var errs []error
	for _, ns := range c.namespaces {
		one := do
		one.Namespace = ns
		if err := c.m.outListOptions(&one.ListOptions, namespaced); err != nil {
			return err
		}
		errs = append(errs, c.m.inError(c.c.DeleteAllOf(ctx, obj, &one)))
	}
	return errors.Join(errs...)
}

// Status is the member's status subresource writer.
func (c *mappingClient) Status() client.SubResourceWriter { return c.SubResource("status") }

// SubResource is the member's client of one subresource.
func (c *mappingClient) SubResource(sub string) client.SubResourceClient {
	return &subResourceClient{m: c.m, scope: c.scope, c: c.c.SubResource(sub)}
}

// Scheme is the member client's scheme.
func (c *mappingClient) Scheme() *runtime.Scheme { return c.c.Scheme() }

// RESTMapper is the member client's REST mapper.
func (c *mappingClient) RESTMapper() meta.RESTMapper { return c.c.RESTMapper() }

// GroupVersionKindFor returns obj's GroupVersionKind.
func (c *mappingClient) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	return c.c.GroupVersionKindFor(obj)
}

// IsObjectNamespaced reports whether obj's kind is namespaced.
func (c *mappingClient) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	return c.c.IsObjectNamespaced(obj)
}

// subResourceClient maps a member's subresource reads and writes.
type subResourceClient struct {
	m     member
	scope scope
	c     client.SubResourceClient
}

// write maps obj (and a subresource object, if any) out, runs do, and maps them back in.
func (s *subResourceClient) write(obj, sub client.Object, do func() error) error {
	namespaced, err := s.scope.namespaced(obj)
	if err != nil {
		return err
	}
	s.m.outObject(obj, namespaced)
	if sub != nil {
		if _, hasMeta := sub.(metav1.Object); hasMeta && sub.GetNamespace() != "" {
			sub.SetNamespace(s.m.out(sub.GetNamespace()))
			defer func() {
				if ns, ok := s.m.in(sub.GetNamespace()); ok {
					sub.SetNamespace(ns)
				}
			}()
		}
	}
	err = do()
	s.m.inObject(obj, namespaced)
	return s.m.inError(err)
}

// Get reads obj's subresource into sub.
func (s *subResourceClient) Get(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceGetOption) error {
	return s.write(obj, sub, func() error { return s.c.Get(ctx, obj, sub, opts...) })
}

// Create creates sub as obj's subresource (an eviction, a token).
func (s *subResourceClient) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return s.write(obj, sub, func() error { return s.c.Create(ctx, obj, sub, opts...) })
}

// Update updates obj's subresource.
func (s *subResourceClient) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.write(obj, nil, func() error { return s.c.Update(ctx, obj, opts...) })
}

// Patch patches obj's subresource, the patch mapped as Patch maps it.
func (s *subResourceClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	raw, err := s.m.outRawPatch(s.scope, obj, patch)
	if err != nil {
		return err
	}
	return s.write(obj, nil, func() error { return s.c.Patch(ctx, obj, raw, opts...) })
}

// Apply server-side applies obj's subresource.
func (s *subResourceClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return s.m.apply(obj, func(ac runtime.ApplyConfiguration) error { return s.c.Apply(ctx, ac, opts...) },
		func(u *unstructured.Unstructured) (bool, error) { return s.scope.namespaced(u) })
}
